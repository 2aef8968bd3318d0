package nodelifecycle

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/explain"
)

func nodeRef(name string) explain.Ref { return explain.Ref{Kind: explain.KindNode, Name: name} }

// verdict is what one period decided for one Node, for `stratus explain`.
type verdict struct {
	// line says it for a person.
	line string
	// err is the failure the period met for this Node (a cloud call, an
	// API write), which counts as a failed attempt; nil when it decided.
	err error
	// deferred: the period decided nothing for good (a held deletion, a
	// kept Node, a failure); the next one looks again.
	deferred bool
	// deleted: the Node is gone; its record is dropped.
	deleted bool
}

// verdicts holds the last period's verdict on each Node it looked at: the
// NotReady ones and the Ready ones that carried the shutdown taint. A Node
// that leaves that set (Ready again, or deleted) leaves the map at the
// next period, so it never holds more than the Nodes needing attention.
type verdicts struct {
	mu    sync.Mutex
	lines map[string]string
}

// describe is the Describer of the explain record: the last period's
// verdict on the Node.
func (c *Controller) describe(_ context.Context, ref explain.Ref) []string {
	c.verdicts.mu.Lock()
	defer c.verdicts.mu.Unlock()
	if l, ok := c.verdicts.lines[ref.Name]; ok {
		return []string{l}
	}
	return nil
}

// judged records the period's verdict on n: the line for describe, and
// the outcome in the explain record, retried at the next period when it
// decided nothing for good.
func (c *Controller) judged(name string, v verdict) {
	if c.explain == nil {
		return
	}
	if v.deleted {
		c.explain.Forget(nodeRef(name))
		c.verdicts.mu.Lock()
		delete(c.verdicts.lines, name)
		c.verdicts.mu.Unlock()
		return
	}
	c.verdicts.mu.Lock()
	c.verdicts.lines[name] = v.line
	c.verdicts.mu.Unlock()
	o := c.period().Outcome(v.err)
	if v.deferred && v.err == nil {
		o = c.period().Deferred()
	}
	c.explain.Synced(nodeRef(name), ControllerName, o.Explain())
}

// forgetUnjudged drops the verdicts on the Nodes this period did not look
// at. A Node still in the cache became Ready: its record says the last
// period found nothing to do; a Node no longer there was deleted, and its
// record is dropped.
func (c *Controller) forgetUnjudged(ctx context.Context, judged map[string]bool) {
	if c.explain == nil {
		return
	}
	c.verdicts.mu.Lock()
	var left []string
	for name := range c.verdicts.lines {
		if !judged[name] {
			left = append(left, name)
			delete(c.verdicts.lines, name)
		}
	}
	c.verdicts.mu.Unlock()
	slices.Sort(left)
	for _, name := range left {
		err := c.client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
		switch {
		case apierrors.IsNotFound(err):
			c.explain.Forget(nodeRef(name))
		case err != nil:
			klog.FromContext(ctx).V(4).Info("Reading a Node that left the monitor's attention failed; its explain record waits", "node", name, "err", err)
		default:
			c.explain.Synced(nodeRef(name), ControllerName, c.period().Outcome(nil).Explain())
		}
	}
}
