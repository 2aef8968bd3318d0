package service

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// TestRefusedSpecKeepsNodesCurrent: the cloud refuses a Service's changed
// spec (a loadBalancerIP it cannot give, say) on every ensure. Nodes added
// and excluded meanwhile still reach the existing load balancer, through
// UpdateLoadBalancer with the spec last applied, and the Service says its
// spec is not applied.
func TestRefusedSpecKeepsNodesCurrent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"), node("n2"))
	h.mustSync("ns/web")
	h.events()
	svc := h.service("ns", "web")
	applied := svc.DeepCopy()
	svc.Spec.LoadBalancerIP = "192.0.2.99"
	h.update(svc)
	refused := errors.New("loadBalancerIP 192.0.2.99 is not in the pool")
	h.lb.FailNext("EnsureLoadBalancer", refused, refused, refused)

	// A node joins, another is excluded from load balancers.
	h.c.nodes.upsert(node("n3"))
	h.c.nodes.upsert(node("n2", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" }))
	if err := h.sync("ns/web"); !errors.Is(err, refused) {
		t.Fatalf("sync = %v, want the refusal", err)
	}
	if got := h.nodesOf("ns/web"); !slices.Equal(got, []string{"n1", "n3"}) {
		t.Errorf("load balancer nodes = %v, want [n1 n3]", got)
	}
	evs := h.events()
	if !hasEvent(evs, "Warning "+ReasonSpecNotApplied) || !hasEvent(evs, "Normal "+ReasonUpdatedLoadBalancer) {
		t.Errorf("events %v: want %s and %s", evs, ReasonSpecNotApplied, ReasonUpdatedLoadBalancer)
	}
	// The update carried the spec the cloud accepted, not the refused one.
	if st := h.c.state.get(nn("ns/web")); st == nil || st.applied.Spec.LoadBalancerIP != applied.Spec.LoadBalancerIP {
		t.Errorf("record's applied spec changed: %+v", st)
	}
	// Nothing changed in the node set: the retry costs the ensure only.
	updates := h.count("UpdateLoadBalancer")
	if err := h.sync("ns/web"); !errors.Is(err, refused) {
		t.Fatalf("sync = %v, want the refusal", err)
	}
	if got := h.count("UpdateLoadBalancer"); got != updates {
		t.Errorf("UpdateLoadBalancer called again (%d, was %d) with the node set unchanged", got, updates)
	}
	// n3 leaves: the load balancer follows although the spec is still refused.
	h.c.nodes.remove("n3")
	_ = h.sync("ns/web")
	if got := h.nodesOf("ns/web"); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("load balancer nodes = %v, want [n1]", got)
	}
	// Once the cloud accepts the spec, it is ensured with the current nodes.
	h.mustSync("ns/web")
	if st := h.c.state.get(nn("ns/web")); st == nil || st.applied.Spec.LoadBalancerIP != "192.0.2.99" {
		t.Errorf("the new spec was not recorded as applied")
	}
}

// TestRetryAfterIsNoRefusal: an ensure told to come back later is not a
// refused spec: no event, no host update.
func TestRetryAfterIsNoRefusal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.mustSync("ns/web")
	h.events()
	svc := h.service("ns", "web")
	svc.Spec.LoadBalancerIP = "192.0.2.99"
	h.update(svc)
	h.lb.FailNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("provisioning", time.Second))
	h.c.nodes.upsert(node("n2"))
	_ = h.sync("ns/web")
	if h.count("UpdateLoadBalancer") != 0 || hasEvent(h.events(), "Warning "+ReasonSpecNotApplied) {
		t.Errorf("calls %v: a retry-later answer was taken for a refusal", h.calls())
	}
}
