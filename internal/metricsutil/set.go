package metricsutil

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// LabelResult is the label every controller counts outcomes under; its
// values are the kit's results (success, retry, error) plus any a metric
// kept from upstream names in its help.
const LabelResult = "result"

// Set builds one component's metrics and registers them together, so that
// a metrics file lists each metric once, as name, help and labels, and
// none can be built but left unregistered.
type Set struct {
	cs []prometheus.Collector
}

func (s *Set) add(c prometheus.Collector) { s.cs = append(s.cs, c) }

// Counter is a counter without labels.
func (s *Set) Counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	s.add(c)
	return c
}

// CounterVec is a counter with labels.
func (s *Set) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	s.add(c)
	return c
}

// Gauge is a gauge without labels.
func (s *Set) Gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	s.add(g)
	return g
}

// GaugeVec is a gauge with labels.
func (s *Set) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	s.add(g)
	return g
}

// GaugeFunc is a gauge computed by f at each scrape.
func (s *Set) GaugeFunc(name, help string, f func() float64) prometheus.GaugeFunc {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	s.add(g)
	return g
}

// Histogram is a histogram without labels.
func (s *Set) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	s.add(h)
	return h
}

// Register adds every metric built so far to reg (none when reg is nil);
// what names the component in the error.
func (s *Set) Register(reg prometheus.Registerer, what string) error {
	if err := Register(reg, s.cs...); err != nil {
		return fmt.Errorf("%s metrics: %w", what, err)
	}
	return nil
}
