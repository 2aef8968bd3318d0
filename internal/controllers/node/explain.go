package node

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

func nodeRef(name string) explain.Ref { return explain.Ref{Kind: explain.KindNode, Name: name} }

// recordSync tells the explain record how an initialization attempt ended
// and when the next comes: after the delay a RetryError named, or after
// the queue's per-Node backoff, which has not counted this failure yet. A
// sync of a Node no longer in the cache (deleted, its entry already
// dropped by the delete handler) records nothing, or it would bring the
// deleted Node's entry back.
func (c *Controller) recordSync(ctx context.Context, req reconcile.Request, err error) {
	if c.explain == nil {
		return
	}
	if err == nil {
		if gerr := c.client.Get(ctx, req.NamespacedName, &corev1.Node{}); apierrors.IsNotFound(gerr) {
			c.explain.Forget(nodeRef(req.Name))
			return
		}
	}
	o := explain.Outcome{Err: err}
	switch d, retry := cloud.RetryAfter(err); {
	case err == nil:
	case retry:
		o.Retry, o.RetryIn, o.RetryWhy = true, max(d, kit.MinRetryAfter), "the cloud asked to come back later (RetryError)"
	default:
		o.RetryIn = backoff(c.cfg.BaseBackoff, c.cfg.MaxBackoff, c.limiter.NumRequeues(req))
		o.RetryWhy = fmt.Sprintf("per-Node exponential backoff (%s to %s)", c.cfg.BaseBackoff, c.cfg.MaxBackoff)
	}
	c.explain.Synced(nodeRef(req.Name), ControllerName, o)
}

// backoff is the exponential failure rate limiter's delay after n failures.
func backoff(base, maxDelay time.Duration, n int) time.Duration {
	d := base
	for range n {
		if d >= maxDelay {
			break
		}
		d *= 2
	}
	return min(d, maxDelay)
}
