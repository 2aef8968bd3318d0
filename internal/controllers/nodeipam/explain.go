package nodeipam

import (
	"context"
	"fmt"
	"strings"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
)

func nodeRef(name string) explain.Ref { return explain.Ref{Kind: explain.KindNode, Name: name} }

// describe is the Describer of the explain record: the pod CIDRs the
// controller holds for the Node, and whether it waits for one to be freed.
func (c *Controller) describe(_ context.Context, ref explain.Ref) []string {
	var lines []string
	if held, pending, ok := c.alloc.holding(ref.Name); ok {
		cidrs := make([]string, len(held))
		for i, p := range held {
			cidrs[i] = p.String()
		}
		if pending {
			lines = append(lines, fmt.Sprintf("allocated pod CIDRs %s; the write to the Node has not been seen yet (a retry writes the same values)", strings.Join(cidrs, ",")))
		} else {
			lines = append(lines, "holds pod CIDRs "+strings.Join(cidrs, ","))
		}
	}
	if c.isWaiting(ref.Name) {
		lines = append(lines, fmt.Sprintf("waiting for a free pod CIDR: %s has none left; retried as soon as a Node is deleted",
			strings.Join(c.alloc.clusterCIDRs(), " or ")))
	}
	return lines
}

// recordSync tells the explain record how an allocation attempt ended and
// when the next comes, as the sync's outcome says.
func (c *Controller) recordSync(name string, o kit.Outcome) {
	if c.explain == nil {
		return
	}
	if _, _, known := c.alloc.holding(name); !known && o.Err == nil && !c.isWaiting(name) {
		// Deleted, or never ours to allocate: nothing to keep.
		c.explain.Forget(nodeRef(name))
		return
	}
	c.explain.Synced(nodeRef(name), ControllerName, o.Explain())
}
