package node

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/internal/metricsutil"
)

// registerWaiting registers the two waiting gauges. They are computed at
// scrape time from the first sightings the controller keeps anyway, so a
// Node's age grows between syncs without anything updating it, and a
// deleted or initialized Node leaves them at its forget.
func (c *Controller) registerWaiting(reg prometheus.Registerer) error {
	var s metricsutil.Set
	s.GaugeFunc(MetricUninitializedNodes,
		"Nodes of this platform carrying the uninitialized taint that the node controller has seen and not yet initialized.",
		func() float64 {
			n, _ := c.waitingNodes()
			return float64(n)
		})
	s.GaugeFunc(MetricOldestUninitializedAge,
		"Seconds since the node controller first saw the longest-waiting uninitialized Node; 0 when none waits.",
		func() float64 {
			_, age := c.waitingNodes()
			return age
		})
	return s.Register(reg, "node controller")
}

// waitingNodes returns how many Nodes wait for initialization and the
// oldest one's age in seconds, by the controller's clock.
func (c *Controller) waitingNodes() (n int, oldestAge float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for _, since := range c.waiting {
		if age := now.Sub(since).Seconds(); age > oldestAge {
			oldestAge = age
		}
	}
	return len(c.waiting), oldestAge
}

// waitingSince returns when the Node was first seen uninitialized, or
// fallback if it is not waiting.
func (c *Controller) waitingSince(name string, fallback time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.waiting[name]; ok {
		return t
	}
	return fallback
}
