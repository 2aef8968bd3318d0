package metricsutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterReturnsExistingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatal("second registration did not return the first collector")
	}
	// Same name, different label set: a real conflict, reported.
	if _, err := Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"a"})); err == nil {
		t.Fatal("conflicting registration accepted")
	}
}
