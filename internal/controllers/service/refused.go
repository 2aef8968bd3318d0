package service

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
)

// ReasonSpecNotApplied is Stratus' own: the cloud did not apply the
// Service's current spec, and its load balancer keeps serving the spec
// last applied (with its node set kept current).
const ReasonSpecNotApplied = "LoadBalancerSpecNotApplied"

// keepHostsCurrent runs after an ensure of a changed spec failed. Without
// it every later sync would take the ensure path and fail again, so
// UpdateLoadBalancer would never be called: the load balancer the cloud
// still serves from the last applied spec would keep the Nodes it had,
// nodes added, removed or excluded since never reaching it. Upstream
// still updates the hosts of the load balancer it has; so does this, with
// the spec the cloud last accepted, and says on the Service that its
// current spec is not applied. The ensure's error is returned, so the
// Service is retried with backoff as before.
func (c *Controller) keepHostsCurrent(ctx context.Context, key types.NamespacedName, svc *corev1.Service, st *lbState, nodes nodeSet, ensureErr error) error {
	if ensureErr == nil || st == nil || st.uid != svc.UID {
		return ensureErr
	}
	if kit.ResultOf(ensureErr) == kit.ResultRetry {
		// Told to come back later (provisioning, throttling): nothing was
		// refused.
		return ensureErr
	}
	c.event(svc, corev1.EventTypeWarning, ReasonSpecNotApplied, actionEnsure,
		"The Service's current spec is not applied; its load balancer keeps serving the spec last applied, with its nodes kept current: %v", ensureErr)
	if sameNodes(st.nodes, nodes) {
		return ensureErr
	}
	klog.FromContext(ctx).V(2).Info("New spec refused; updating the existing load balancer's hosts with the spec last applied")
	gone, err := c.updateHosts(ctx, key, st.applied, st, nodes)
	if gone || err == nil {
		// Gone: the record is forgotten and the retry ensures afresh.
		return ensureErr
	}
	return errors.Join(ensureErr, err)
}
