// Package metricsutil holds the Prometheus plumbing every controller
// shares: Set builds a component's metrics, each in one call, and
// registers them together; LabelResult is the one outcome label.
package metricsutil

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register adds every collector to reg; nil reg registers nothing. Each
// controller registers on the registerer it is given, once per instance:
// a second controller on the same registry is a wiring error, reported
// rather than hidden.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register metric: %w", err)
		}
	}
	return nil
}
