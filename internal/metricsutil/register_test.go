package metricsutil

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRegisterAddsEveryCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "a"})
	b := prometheus.NewGauge(prometheus.GaugeOpts{Name: "b", Help: "b"})
	if err := Register(reg, a, b); err != nil {
		t.Fatal(err)
	}
	a.Inc()
	b.Set(2)
	if n, err := testutil.GatherAndCount(reg, "a_total", "b"); err != nil || n != 2 {
		t.Fatalf("gathered %d series (%v), want 2", n, err)
	}
}

func TestRegisterReportsDuplicates(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if err := Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})); err != nil {
		t.Fatal(err)
	}
	err := Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}))
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second registration of x_total: err = %v, want AlreadyRegisteredError", err)
	}
}

func TestRegisterNilRegistererIsANoOp(t *testing.T) {
	t.Parallel()
	if err := Register(nil, prometheus.NewCounter(prometheus.CounterOpts{Name: "y_total", Help: "y"})); err != nil {
		t.Fatal(err)
	}
}
