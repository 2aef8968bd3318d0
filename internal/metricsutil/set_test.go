package metricsutil

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSetRegistersWhatItBuilt: every kind the Set builds is registered by
// its one Register call, with the name, help and labels given.
func TestSetRegistersWhatItBuilt(t *testing.T) {
	t.Parallel()
	var s Set
	c := s.Counter("c_total", "c")
	cv := s.CounterVec("cv_total", "cv", LabelResult)
	g := s.Gauge("g", "g")
	gv := s.GaugeVec("gv", "gv", "state")
	s.GaugeFunc("gf", "gf", func() float64 { return 7 })
	h := s.Histogram("h_seconds", "h", []float64{1, 2})
	reg := prometheus.NewRegistry()
	if err := s.Register(reg, "test"); err != nil {
		t.Fatal(err)
	}
	c.Inc()
	cv.WithLabelValues("success").Inc()
	g.Set(1)
	gv.WithLabelValues("serving").Set(1)
	h.Observe(1.5)
	names := []string{"c_total", "cv_total", "g", "gv", "gf", "h_seconds"}
	if n, err := testutil.GatherAndCount(reg, names...); err != nil || n != len(names) {
		t.Fatalf("gathered %d series (%v), want %d", n, err, len(names))
	}
	want := "# HELP cv_total cv\n# TYPE cv_total counter\ncv_total{result=\"success\"} 1\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "cv_total"); err != nil {
		t.Fatal(err)
	}
}

// TestSetRegisterNamesTheComponent: a second component on the same
// registry is a wiring error, reported with the component's name.
func TestSetRegisterNamesTheComponent(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	for i, what := range []string{"first", "second"} {
		var s Set
		s.Counter("dup_total", "dup")
		err := s.Register(reg, what)
		if i == 0 && err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) || !strings.Contains(err.Error(), "second metrics") {
				t.Fatalf("second registration: err = %v, want AlreadyRegisteredError naming %q", err, what)
			}
		}
	}
	var s Set
	s.Gauge("g", "g")
	if err := s.Register(nil, "none"); err != nil {
		t.Fatalf("nil registerer: %v", err)
	}
}
