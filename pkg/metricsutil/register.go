// Package metricsutil holds the one piece of Prometheus plumbing every
// controller shares.
package metricsutil

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register adds c to reg, or returns the collector already registered under
// the same name: a process that builds a controller twice (a test that
// restarts its manager, a leader that loses and regains the lease) keeps
// one set of series instead of failing.
func Register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register metric: %w", err)
}
