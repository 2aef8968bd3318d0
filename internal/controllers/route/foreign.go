package route

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/ownership"
)

// The messages this controller writes on NetworkUnavailable. Its reasons
// are upstream's (RouteCreated, NoRouteCreated), which another platform's
// upstream-based route controller writes too, with upstream's messages
// ("RouteController created a route"): the message is what tells a
// condition this controller wrote from one written by another.
const (
	msgRoutesExist   = "Cloud routes exist for pod CIDRs "
	msgCreateFailed  = "Could not create cloud routes: "
	msgBackingOffFmt = "%d cloud route(s) missing; creation is backing off after failures"
	msgBackingOff    = " cloud route(s) missing; creation is backing off after failures"
)

// ReasonRemovedNetworkUnavailable is the Normal event on a foreign Node
// whose NetworkUnavailable condition, written by this controller before
// the Node was foreign, was removed.
const ReasonRemovedNetworkUnavailable = "RemovedNetworkUnavailable"

const actionRemoveCondition = "RemoveCondition"

// foreignNodes remembers the foreign Nodes a pass has already looked at,
// by name and UID, so that a stale condition is removed only when a Node
// becomes foreign (the first pass that sees it so), never again: this
// controller writes no condition on a foreign Node, so a Stratus-worded
// one that appears later is another controller manager's, the one that
// routes that platform (another binary built on Stratus, say), and
// removing it again would fight that controller every pass.
type foreignNodes struct {
	mu   sync.Mutex
	seen map[string]types.UID
}

func (f *foreignNodes) handled(n *corev1.Node) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	uid, ok := f.seen[n.Name]
	return ok && uid == n.UID
}

func (f *foreignNodes) done(n *corev1.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[n.Name] = n.UID
}

// retain keeps the Nodes that are foreign in this pass: a Node that stops
// being foreign, or is deleted, is forgotten, so that it counts as
// becoming foreign again if it does.
func (f *foreignNodes) retain(foreign []corev1.Node) {
	keep := make(map[string]bool, len(foreign))
	for i := range foreign {
		keep[foreign[i].Name] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.seen {
		if !keep[name] {
			delete(f.seen, name)
		}
	}
}

// ownCondition returns the index of n's NetworkUnavailable condition when
// this controller wrote it (its reason and one of its messages), else -1.
func ownCondition(n *corev1.Node) int {
	for i, c := range n.Status.Conditions {
		if c.Type != corev1.NodeNetworkUnavailable {
			continue
		}
		ours := c.Reason == ConditionRouteCreated && strings.HasPrefix(c.Message, msgRoutesExist) ||
			c.Reason == ConditionNoRouteCreated && (strings.HasPrefix(c.Message, msgCreateFailed) || strings.HasSuffix(c.Message, msgBackingOff))
		if ours {
			return i
		}
		return -1
	}
	return -1
}

// clearForeignConditions removes, from each Node that became foreign since
// the last pass, the NetworkUnavailable condition this controller wrote
// while it still routed the Node: it no longer manages those routes (the
// pass deletes them), so its condition would keep claiming a state it does
// not know, and a True one keeps the network-unavailable taint off which
// the Node's own platform may never take. A condition another controller
// wrote is left alone. A failed removal is retried by the next pass.
func (c *Controller) clearForeignConditions(ctx context.Context, foreign []corev1.Node) error {
	c.foreign.retain(foreign)
	var errs []error
	for i := range foreign {
		n := &foreign[i]
		if c.foreign.handled(n) {
			continue
		}
		idx := ownCondition(n)
		if idx < 0 {
			c.foreign.done(n)
			continue
		}
		if err := c.removeCondition(ctx, n, idx); err != nil {
			errs = append(errs, err)
			continue
		}
		c.foreign.done(n)
	}
	if len(errs) > 0 {
		return fmt.Errorf("route controller: remove NetworkUnavailable from foreign nodes: %w", errors.Join(errs...))
	}
	return nil
}

// removeCondition removes n's condition at idx with a JSON patch whose
// tests make it apply only to the condition as the cache showed it: one
// rewritten since (by the Node's own platform, say) is left alone.
func (c *Controller) removeCondition(ctx context.Context, n *corev1.Node, idx int) error {
	cond := n.Status.Conditions[idx]
	at := fmt.Sprintf("/status/conditions/%d", idx)
	body, err := json.Marshal([]map[string]any{
		{"op": "test", "path": at + "/type", "value": cond.Type},
		{"op": "test", "path": at + "/reason", "value": cond.Reason},
		{"op": "test", "path": at + "/message", "value": cond.Message},
		{"op": "remove", "path": at},
	})
	if err != nil {
		return fmt.Errorf("encode condition removal: %w", err)
	}
	log := klog.FromContext(ctx).WithValues("node", klog.KObj(n))
	target := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
	err = c.client.Status().Patch(ctx, target, client.RawPatch(types.JSONPatchType, body))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsInvalid(err):
		// A test failed: the condition changed since the cache showed
		// it, so it is no longer the one this controller left.
		log.V(2).Info("NetworkUnavailable changed since it was read; leaving it", "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("patch node %s: %w", n.Name, err)
	}
	why := foreignWhy(n, c.ownership)
	log.Info("Removed the NetworkUnavailable condition this controller wrote before the node was foreign",
		"status", cond.Status, "reason", cond.Reason, "why", why)
	c.recorder.Eventf(n, nil, corev1.EventTypeNormal, ReasonRemovedNetworkUnavailable, actionRemoveCondition,
		"Removed NetworkUnavailable=%s (%s) that the route controller wrote before: %s", cond.Status, cond.Reason, why)
	return nil
}

// foreignWhy says why n is not this controller manager's to route: what
// names its platform, and the platforms it does route.
func foreignWhy(n *corev1.Node, pol ownership.Policy) string {
	var what string
	switch id := n.Spec.ProviderID; {
	case id != "" && ownership.Platform(id) == "":
		what = fmt.Sprintf("its spec.providerID %q names no platform", id)
	case id != "":
		what = fmt.Sprintf("its spec.providerID %q is of platform %q", id, ownership.Platform(id))
	default:
		what = fmt.Sprintf("its annotation %s is %q", ownership.AnnotationPlatform, n.Annotations[ownership.AnnotationPlatform])
	}
	return fmt.Sprintf("the Node is another platform's: %s, and this controller manager routes platforms %s only (--cloud-provider-platforms, or the provider's own list)",
		what, strings.Join(pol.Platforms(), ","))
}

// createError is what a failed creation says in the Node's condition, its
// event and explain: the cloud's error, and when the cloud does not know
// the Node's instance, which Node that is and which platforms are routed,
// since "instance not found" alone reads as a machine that is gone when
// the Node may be another platform's.
func createError(n *corev1.Node, pol ownership.Policy, err error) string {
	if !errors.Is(err, cloudprovider.InstanceNotFound) {
		return err.Error()
	}
	if !pol.Enabled() {
		return fmt.Sprintf("%v (the cloud has no instance for Node %s, spec.providerID %q; every Node is routed as this cloud's, since neither --cloud-provider-platforms nor the provider names this cloud's platforms: if the Node is another platform's, set --cloud-provider-platforms)",
			err, n.Name, n.Spec.ProviderID)
	}
	return fmt.Sprintf("%v (the cloud has no instance for Node %s, spec.providerID %q, although its platform is one this controller manager routes: %s)",
		err, n.Name, n.Spec.ProviderID, strings.Join(pol.Platforms(), ","))
}
