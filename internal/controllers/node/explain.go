package node

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
)

func nodeRef(name string) explain.Ref { return explain.Ref{Kind: explain.KindNode, Name: name} }

// recordSync tells the explain record how an initialization attempt ended
// and when the next comes, as the sync's outcome says: after the delay a
// RetryError named, or after the queue's per-Node backoff. A sync of a
// Node no longer in the cache (deleted, its entry already dropped by the
// delete handler) records nothing, or it would bring the deleted Node's
// entry back.
func (c *Controller) recordSync(ctx context.Context, req reconcile.Request, o kit.Outcome) {
	if c.explain == nil {
		return
	}
	if o.Err == nil {
		if gerr := c.client.Get(ctx, req.NamespacedName, &corev1.Node{}); apierrors.IsNotFound(gerr) {
			c.explain.Forget(nodeRef(req.Name))
			return
		}
	}
	c.explain.Synced(nodeRef(req.Name), ControllerName, o.Explain())
}
