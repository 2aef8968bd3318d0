package node

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/internal/ownership"
)

// isForeign reports whether the Node belongs to another platform in a
// hybrid cluster (Deps.Ownership), and keeps the count of such Nodes that
// MetricForeignNodes serves. The node handler sees every Node, so the
// count follows every change of providerID or platform annotation.
func (c *Controller) isForeign(n *corev1.Node) bool {
	foreign := c.ownership.Of(n) == ownership.Foreign
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, was := c.foreign[n.Name]; was != foreign {
		if foreign {
			c.foreign[n.Name] = struct{}{}
		} else {
			delete(c.foreign, n.Name)
		}
		c.metrics.foreign.Set(float64(len(c.foreign)))
	}
	return foreign
}

// forgetForeign drops a deleted Node from the count.
func (c *Controller) forgetForeign(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.foreign[name]; ok {
		delete(c.foreign, name)
		c.metrics.foreign.Set(float64(len(c.foreign)))
	}
}
