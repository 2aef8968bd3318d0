package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Condition types the controller sets in a Service's status.conditions
// (KEP-4631's LoadBalancerProvisioning and LoadBalancerServing, KEP-1435's
// LoadBalancerPortsError). Other writers' conditions are never touched.
const (
	// ConditionProvisioning is True while the load balancer is being
	// created or updated and the work is not done: the reason says what it
	// waits for.
	ConditionProvisioning = "LoadBalancerProvisioning"
	// ConditionServing is True once the ingress is published and the last
	// ensure succeeded; False with the provider's message and the next
	// retry time when it failed.
	ConditionServing = "LoadBalancerServing"
	// ConditionPortsError is True when the provider refused a port or a
	// protocol of the Service (its error wraps cloud.ErrPortNotSupported).
	ConditionPortsError = "LoadBalancerPortsError"
)

// Condition reasons. Where an event says the same thing, the condition
// uses the event's reason (ReasonEnsuredLoadBalancer,
// ReasonSyncLoadBalancerFailed), so that a search for one finds both.
const (
	// ReasonWaitingForCloud (Provisioning=True, Serving=False before the
	// first success): the provider asked to come back later (a
	// RetryError), as while the cloud provisions. This and the next two
	// are the reasons of the sync's kit.Outcome.
	ReasonWaitingForCloud = kit.ReasonWaitingForCloud
	// ReasonThrottled (Provisioning=True, Serving=False before the first
	// success): the cloud refused the call for its rate limit; the retry
	// waits for the delay it named.
	ReasonThrottled = kit.ReasonThrottled
	// ReasonRetryingAfterError (Provisioning=True): the last attempt failed;
	// the message has the error and the next retry time (per-Service
	// exponential backoff).
	ReasonRetryingAfterError = kit.ReasonRetryingAfterError
	// ReasonProvisioned (Provisioning=False): nothing is left to do.
	ReasonProvisioned = "Provisioned"
	// ReasonQuotaExceeded (Serving=False): the cloud refused the load
	// balancer because a quota is used up (cloud.ErrQuotaExceeded); the
	// event is SyncLoadBalancerFailed with the same message.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonPortNotSupported (PortsError=True): the provider refused a
	// port or protocol; ReasonPortsAccepted (PortsError=False) once it
	// accepts them.
	ReasonPortNotSupported = "PortNotSupported"
	ReasonPortsAccepted    = "PortsAccepted"
	// ReasonServingPreviousSpec (Serving=True): the Service's newest spec
	// is refused or not applied yet, and its load balancer still serves
	// the spec last ensured; Provisioning=True says why and when the next
	// retry is.
	ReasonServingPreviousSpec = "ServingPreviousSpec"
)

// isOwnCondition reports whether t is one of the condition types this
// controller writes.
func isOwnCondition(t string) bool {
	return t == ConditionProvisioning || t == ConditionServing || t == ConditionPortsError
}

// reportConditions sets the Service's conditions from the outcome of its
// sync: svc is the Service as the cache has it after the sync, o how the
// sync ended (the kit's one decision), and the controller's record of what it
// last applied tells a failed ensure from a failed node update. It writes
// only when a condition changed, only the controller's own conditions, and
// nothing with NoConditions (observe mode) or for a Service it does not serve. A failure to
// write is logged and left to the next sync: the conditions report, they
// never hold up the load balancer.
func (c *Controller) reportConditions(ctx context.Context, svc *corev1.Service, o kit.Outcome) {
	if c.cfg.NoConditions {
		return
	}
	k := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	want, ok := c.desiredConditions(k, svc, o)
	if !ok {
		c.firstWaits.end(k)
		return
	}
	if c.firstWaits.quiet(k, svc, o) {
		return
	}
	if err := c.writeConditions(ctx, svc, want); err != nil {
		klog.FromContext(ctx).Error(err, "Writing the load balancer conditions failed; the next sync writes them")
	}
}

// desiredConditions returns the conditions svc should carry after a sync
// that ended as o; nil removes the controller's own. ok is false when the
// conditions are left as they are.
func (c *Controller) desiredConditions(key types.NamespacedName, svc *corev1.Service, o kit.Outcome) ([]metav1.Condition, bool) {
	class := c.cfg.LoadBalancerClass
	switch {
	case !ownedClass(svc, class):
		return nil, false
	case svc.DeletionTimestamp != nil:
		return nil, false
	case !wantsLoadBalancer(svc, class):
		// Type changed away from LoadBalancer: once cleaned up, the
		// conditions go with the load balancer.
		return nil, o.Err == nil && hasOwnConditions(svc)
	}
	st := c.state.get(key)
	ensurePending := st == nil || st.uid != svc.UID || !lbConfigEqual(st.applied, svc)
	if o.Err == nil {
		if ensurePending {
			// The provider implements it elsewhere: not this controller's
			// to report on.
			return nil, false
		}
		return c.servingConditions(svc, st), true
	}
	return c.failedConditions(svc, st, o, ensurePending), true
}

// firstWaits holds the Services whose first sync was told to come back
// later (a load balancer being provisioned). That first answer writes no
// conditions: most load balancers are ready at the next sync, which then
// publishes the address and Serving=True in the one write upstream makes
// too, so a load balancer provisioned within one retry costs no write
// upstream does not make. A second such answer writes
// Provisioning=True/WaitingForCloud: the wait has become something an
// operator may look for. `stratus explain` and the events say it from the
// first.
type firstWaits struct {
	mu sync.Mutex
	m  map[types.NamespacedName]bool
}

// quiet reports whether this sync's conditions are left unwritten: the
// first of a run of WaitingForCloud outcomes of a Service that carries
// none of the controller's conditions yet. Any other outcome ends the run.
func (f *firstWaits) quiet(k types.NamespacedName, svc *corev1.Service, o kit.Outcome) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.Err == nil || o.Failed() || o.Reason != ReasonWaitingForCloud || hasOwnConditions(svc) {
		delete(f.m, k)
		return false
	}
	if f.m[k] {
		delete(f.m, k)
		return false
	}
	if f.m == nil {
		f.m = map[types.NamespacedName]bool{}
	}
	f.m[k] = true
	return true
}

func (f *firstWaits) end(k types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, k)
}

func hasOwnConditions(svc *corev1.Service) bool {
	for _, cond := range svc.Status.Conditions {
		if isOwnCondition(cond.Type) {
			return true
		}
	}
	return false
}

// servingConditions: the last ensure succeeded and the ingress is
// published; the load balancer may still wait for a burst of node changes.
func (c *Controller) servingConditions(svc *corev1.Service, st *lbState) []metav1.Condition {
	serving := cond(ConditionServing, metav1.ConditionTrue, ReasonEnsuredLoadBalancer,
		"Load balancer serves "+ingressString(st.status.Ingress))
	// The record keeps the node set's identities only (state.set), not
	// the Node objects.
	switch {
	case st.targets == targetEndpoints && endpointCount(st.endpoints) == 0:
		serving.Message += "; it has no endpoints to send traffic to"
	case st.targets == targetNodes && len(st.nodes.ids) == 0:
		serving.Message += "; it has no nodes to send traffic to"
	}
	if st.fallback != "" {
		serving.Reason = ReasonEndpointTargetsNotSupported
		serving.Message += "; it targets nodes, not the Service's endpoints: " + st.fallback
	}
	if len(st.unserved) > 0 {
		serving.Message += fmt.Sprintf("; it does not serve %v of spec.ipFamilies %v", st.unserved, svc.Spec.IPFamilies)
	}
	// A burst of node changes settling (a second or so) is not reported
	// here: it would cost every load balancer two status writes per burst
	// that upstream does not make; `stratus explain` says it.
	prov := cond(ConditionProvisioning, metav1.ConditionFalse, ReasonProvisioned, "Load balancer is up to date")
	out := []metav1.Condition{prov, serving}
	if meta.FindStatusCondition(svc.Status.Conditions, ConditionPortsError) != nil {
		out = append(out, cond(ConditionPortsError, metav1.ConditionFalse, ReasonPortsAccepted, "The cloud accepts every port"))
	}
	return out
}

// failedConditions: the sync failed or the cloud asked to come back later.
// A failed ensure means the load balancer does not serve what the Service
// asks for; a failed node update leaves it serving the previous nodes.
// The Provisioning reason is the outcome's; the Serving and PortsError
// conditions name what the cloud refused (a quota, a port), which the
// outcome leaves to the condition that reports it.
func (c *Controller) failedConditions(svc *corev1.Service, st *lbState, o kit.Outcome, ensurePending bool) []metav1.Condition {
	// The retry time goes first, so that it is never the part a long
	// message loses when bounded.
	msg := o.Err.Error()
	if retry := c.retryTime(o); retry != "" {
		msg = retry + ": " + msg
	}
	out := []metav1.Condition{cond(ConditionProvisioning, metav1.ConditionTrue, o.Reason, msg)}
	if !ensurePending {
		if prev := meta.FindStatusCondition(svc.Status.Conditions, ConditionServing); prev != nil {
			out = append(out, *prev)
		}
		return out
	}
	servingReason := ReasonSyncLoadBalancerFailed
	switch {
	case errors.Is(o.Err, cloud.ErrQuotaExceeded):
		servingReason = ReasonQuotaExceeded
	case errors.Is(o.Err, cloud.ErrIPFamilyNotSupported):
		servingReason = ReasonIPFamilyNotSupported
	case errors.Is(o.Err, errEndpointTargetsNotSupported):
		servingReason = ReasonEndpointTargetsNotSupported
	case !o.Failed():
		servingReason = o.Reason
	}
	if ingress := previouslyServed(svc, st); ingress != "" {
		// A refused update does not take the load balancer down: it keeps
		// serving what was last ensured, and saying False would send an
		// operator after an outage that is not there.
		out = append(out, cond(ConditionServing, metav1.ConditionTrue, ReasonServingPreviousSpec,
			"Load balancer serves "+ingress+" as last ensured; the Service's newest spec is not applied: "+msg))
	} else {
		out = append(out, cond(ConditionServing, metav1.ConditionFalse, servingReason, msg))
	}
	if errors.Is(o.Err, cloud.ErrPortNotSupported) {
		out = append(out, cond(ConditionPortsError, metav1.ConditionTrue, ReasonPortNotSupported, kit.BoundMessage(o.Err.Error())))
	} else if meta.FindStatusCondition(svc.Status.Conditions, ConditionPortsError) != nil {
		out = append(out, cond(ConditionPortsError, metav1.ConditionFalse, ReasonPortsAccepted, "The cloud refused no port"))
	}
	return out
}

// previouslyServed returns the ingress of the load balancer an earlier
// ensure of this Service made, which serves the spec then ensured: this
// controller's record of it, or after a restart the ingress the Service
// publishes. "" when no load balancer was ever ensured for it.
func previouslyServed(svc *corev1.Service, st *lbState) string {
	if st != nil && st.uid == svc.UID && len(st.status.Ingress) > 0 {
		return ingressString(st.status.Ingress)
	}
	if st == nil && len(svc.Status.LoadBalancer.Ingress) > 0 {
		return ingressString(svc.Status.LoadBalancer.Ingress)
	}
	return ""
}

// retryTime says when a failed sync runs again: the outcome's retry, the
// queue's next per-Service backoff. A RetryError's delay is the provider's
// own and says no time in the message (a load balancer being provisioned
// would rewrite it at every poll).
func (c *Controller) retryTime(o kit.Outcome) string {
	if !o.Failed() {
		return ""
	}
	at := c.now().Add(o.RetryIn).UTC().Truncate(time.Second)
	if o.Outage() {
		// The recovery retries it sooner; the condition says so, so that
		// an early retry is no surprise.
		return fmt.Sprintf("next retry at %s (in %s, or sooner when the cloud answers again)", at.Format(time.RFC3339), o.RetryIn.Round(time.Second))
	}
	return fmt.Sprintf("next retry at %s (in %s)", at.Format(time.RFC3339), o.RetryIn.Round(time.Second))
}

func cond(t string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: kit.BoundMessage(msg)}
}

func ingressString(in []corev1.LoadBalancerIngress) string {
	if len(in) == 0 {
		return "(no ingress address)"
	}
	parts := make([]string, 0, len(in))
	for _, i := range in {
		parts = append(parts, i.IP+i.Hostname)
	}
	return strings.Join(parts, ", ")
}

// writeConditions replaces the controller's own conditions with want (nil
// removes them) in a strategic merge patch of the status subresource under
// the controller's field manager. status.conditions merges by type, so
// the patch names only the controller's own types and another writer's
// conditions are never part of it. No write when nothing changed; the
// transition time changes only with the status.
func (c *Controller) writeConditions(ctx context.Context, svc *corev1.Service, want []metav1.Condition) error {
	updated := svc.DeepCopy()
	setOwnConditions(updated, want)
	if equality.Semantic.DeepEqual(svc.Status.Conditions, updated.Status.Conditions) {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Patching load balancer conditions", "conditions", conditionSummary(want))
	err := c.client.Status().Patch(ctx, updated, client.StrategicMergeFrom(svc))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch conditions of service %s: %w", klog.KObj(svc), err)
	}
	return nil
}

// setOwnConditions makes svc's own conditions want (nil removes them);
// the transition time changes only with the status.
func setOwnConditions(svc *corev1.Service, want []metav1.Condition) {
	for _, t := range []string{ConditionProvisioning, ConditionServing, ConditionPortsError} {
		if !hasType(want, t) {
			meta.RemoveStatusCondition(&svc.Status.Conditions, t)
		}
	}
	for _, w := range want {
		w.ObservedGeneration = svc.Generation
		meta.SetStatusCondition(&svc.Status.Conditions, w)
	}
}

// conditionsAfterEnsure are the conditions of a Service whose ensure just
// succeeded, for the status write that publishes its ingress; none with
// NoConditions.
func (c *Controller) conditionsAfterEnsure(key types.NamespacedName, svc *corev1.Service) []metav1.Condition {
	if c.cfg.NoConditions {
		return nil
	}
	want, ok := c.desiredConditions(key, svc, kit.Outcome{})
	if !ok {
		return nil
	}
	return want
}

func hasType(cs []metav1.Condition, t string) bool {
	for _, c := range cs {
		if c.Type == t {
			return true
		}
	}
	return false
}

func conditionSummary(cs []metav1.Condition) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Type+"="+string(c.Status)+"/"+c.Reason)
	}
	return out
}
