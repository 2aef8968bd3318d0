package route

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/ownership"
)

func nodeRef(name string) explain.Ref { return explain.Ref{Kind: explain.KindNode, Name: name} }

// routeStates is what the last pass found for each routable Node, for
// `stratus explain node`. It holds only the routable Nodes of the last
// pass (retain) and drops a deleted Node at once (nodeHandler).
type routeStates struct {
	mu    sync.Mutex
	nodes map[string]routeState
}

// routeState is one Node's routes after a pass.
type routeState struct {
	cidrs   []string
	missing int
	errs    []string
}

func (s *routeStates) set(name string, st routeState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[name] = st
}

func (s *routeStates) get(name string) (routeState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.nodes[name]
	return st, ok
}

func (s *routeStates) drop(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.nodes, name)
}

// retain keeps the Nodes of this pass only.
func (s *routeStates) retain(routable map[string]*nodeRoutes) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.nodes {
		if routable[name] == nil {
			delete(s.nodes, name)
		}
	}
}

// explainPass records, for every routable Node, its routes after this
// pass: a success when all exist, a failed attempt when a creation failed
// (retried after the route's backoff). A Node whose creations only wait
// for their backoff made no attempt: its record keeps the last one.
func (c *Controller) explainPass(p *plan, created map[string]bool) {
	if c.explain == nil {
		return
	}
	c.states.retain(p.routable)
	now := c.clock.Now()
	for name, nr := range p.routable {
		st := routeState{cidrs: nr.node.Spec.PodCIDRs, missing: nr.missing, errs: nr.errs}
		if prev, ok := c.states.get(name); ok && len(st.errs) == 0 && st.missing > 0 && !created[name] {
			st.errs = prev.errs // backing off: the last attempt's failures still hold
		}
		c.states.set(name, st)
		switch {
		case len(nr.errs) > 0:
			o := explain.Outcome{Err: errors.New("create routes: " + strings.Join(nr.errs, "; "))}
			if at, ok := c.nextTry(nr); ok {
				o.RetryIn = max(at.Sub(now), time.Millisecond)
				o.RetryWhy = fmt.Sprintf("per-route backoff after a failed creation (%s to %s)", c.cfg.ReconcilePeriod, c.cfg.MaxBackoff)
			}
			c.explain.Synced(nodeRef(name), ControllerName, o)
		case nr.missing <= 0 || created[name]:
			c.explain.Synced(nodeRef(name), ControllerName, explain.Outcome{})
		}
	}
}

// nextTry is when the first of the Node's failed routes may be tried again.
func (c *Controller) nextTry(nr *nodeRoutes) (time.Time, bool) {
	var first time.Time
	found := false
	for _, s := range nr.node.Spec.PodCIDRs {
		cidr, ok := canonical(s)
		if !ok {
			continue
		}
		if e, ok := c.backoff.entry(routeKey{cidr: cidr, node: nr.node.Name}); ok && (!found || e.retryAt.Before(first)) {
			first, found = e.retryAt, true
		}
	}
	return first, found
}

// describe says what the route controller knows of a Node: why it gets no
// route, or its routes' state after the last pass and when a failed one
// is tried again.
func (c *Controller) describe(ctx context.Context, ref explain.Ref) []string {
	st, ok := c.states.get(ref.Name)
	if !ok {
		n := &corev1.Node{}
		if err := c.client.Get(ctx, client.ObjectKey{Name: ref.Name}, n); err != nil {
			return nil
		}
		if c.ownership.Of(n) == ownership.Foreign {
			return []string{"not routed here: " + foreignWhy(n, c.ownership)}
		}
		return []string{notRoutable(n)}
	}
	lines := []string{fmt.Sprintf("routes for pod CIDRs %s: %d of %d in the route table of cluster %s",
		strings.Join(st.cidrs, ", "), len(st.cidrs)-st.missing, len(st.cidrs), c.cfg.ClusterName)}
	for _, e := range st.errs {
		lines = append(lines, "creation failed in the last attempt: "+e)
	}
	for _, s := range st.cidrs {
		cidr, ok := canonical(s)
		if !ok {
			continue
		}
		if e, ok := c.backoff.entry(routeKey{cidr: cidr, node: ref.Name}); ok {
			lines = append(lines, fmt.Sprintf("route %s: %d failed creations, next try at %s (per-route backoff)", cidr, e.failures, e.retryAt.UTC().Format(time.RFC3339)))
		}
	}
	return lines
}

// notRoutable says why a Node the last pass did not route gets no route.
func notRoutable(n *corev1.Node) string {
	switch {
	case len(n.Spec.PodCIDRs) == 0:
		return "no route: the Node has no spec.podCIDRs yet (the IPAM controller, kube-controller-manager's or Stratus', allocates them)"
	case n.Spec.ProviderID == "":
		return "no route yet: the Node has no spec.providerID (the cloud-node-controller sets it at initialization)"
	case !n.DeletionTimestamp.IsZero():
		return "no route: the Node is being deleted"
	default:
		return "not routed yet: the next route pass takes it"
	}
}

// forgetNode drops a deleted Node's route state and explain record.
func (c *Controller) forgetNode(name string) {
	c.states.drop(name)
	c.explain.Forget(nodeRef(name))
}
