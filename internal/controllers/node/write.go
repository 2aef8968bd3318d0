package node

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writing Nodes under the roles written for upstream's controller.
//
// The controller prefers patches: they carry only what it changes, so a
// field another writer sets meanwhile is kept without a conflict.
// Upstream's controller writes the Node's spec and metadata with UPDATE,
// and some roles published for upstream-based managers grant nodes
// `update` but not `patch` (kube-vip's). Under such a role the spec write
// falls back to an update at the resourceVersion the patch was computed
// from, the optimistic concurrency upstream's update has: a Node changed
// meanwhile fails with a conflict and is retried from the cache, never
// overwritten. The status write has no such fallback: an update of the
// status replaces it whole, and the cached Node lacks the fields the cache
// strips (objcache.StrippedNodeStatus); upstream patches the status too.

// writeNode writes want, built from base, with patch, or with an update at
// base's resourceVersion once the API server has refused a patch of Nodes.
// On success want holds the Node the API server returned.
func (c *Controller) writeNode(ctx context.Context, want, base *corev1.Node, patch client.Patch) error {
	if !c.updateOnly.Load() {
		err := c.client.Patch(ctx, want, patch)
		if !apierrors.IsForbidden(err) {
			return err
		}
		// Remembered, so that each later write costs one request, not a
		// refused patch first.
		if c.updateOnly.CompareAndSwap(false, true) {
			klog.FromContext(ctx).Info("Patching Nodes is forbidden: writing them with update at their resourceVersion instead, as upstream's node controller does; grant patch on nodes to write only the changed fields", "node", klog.KObj(want), "err", err)
		}
	}
	upd := want.DeepCopy()
	upd.ResourceVersion = base.ResourceVersion
	err := c.client.Update(ctx, upd)
	if apierrors.IsForbidden(err) {
		// The role changed again, or grants neither verb: the next write
		// tries a patch first.
		c.updateOnly.Store(false)
	}
	if err != nil {
		return err
	}
	*want = *upd
	return nil
}

// statusForbidden reports whether a status write failed because the
// controller's role does not grant it (nodes/status), which upstream's
// controller logs and goes on from: the Node is initialized with the
// addresses it has.
func statusForbidden(err error) bool {
	var apiErr *apiError
	return errors.As(err, &apiErr) && apierrors.IsForbidden(err)
}

// patchAddresses writes addrs into the Node's status with a JSON merge
// patch, which replaces the list: the strategic merge key of addresses
// (type) cannot express two addresses of one type. On success it returns
// the Node the API server returned.
func (c *Controller) patchAddresses(ctx context.Context, node *corev1.Node, addrs []corev1.NodeAddress) (*corev1.Node, error) {
	patched := node.DeepCopy()
	patched.Status.Addresses = addrs
	if err := c.client.Status().Patch(ctx, patched, client.MergeFrom(node)); err != nil {
		return nil, &apiError{fmt.Errorf("patch addresses of node %s: %w", node.Name, err)}
	}
	return patched, nil
}
