package service

import (
	"context"
	"testing"
)

// The orphan pass's list also finds load balancers deleted or changed in
// the cloud behind the controller's back: those Services are queued and
// ensured again; an unchanged one costs nothing.
func TestOrphanPassRepairsDrift(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "kept"), lbService("ns", "deleted"), lbService("ns", "changed"),
		node("n1"), node("n2"))
	for _, k := range []string{"ns/kept", "ns/deleted", "ns/changed"} {
		h.mustSync(k)
	}
	// Behind the controller's back: kept is listed with its backends in
	// another order, deleted is gone, changed lost n2.
	kept, _ := h.balancer("ns/kept")
	kept.Backends = []string{"fake://n2", "fake://n1"}
	h.lb.PutBalancer(kept)
	deleted, _ := h.balancer("ns/deleted")
	h.lb.DeleteBalancer(h.cluster, deleted.Name)
	changed, _ := h.balancer("ns/changed")
	changed.Backends = []string{"fake://n1"}
	h.lb.PutBalancer(changed)
	if err := h.c.collectOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	queued := map[string]bool{}
	for h.q.Len() > 0 {
		k, _ := h.q.Get()
		queued[k.Service.String()] = true
		h.q.Done(k)
	}
	if len(queued) != 2 || !queued["ns/deleted"] || !queued["ns/changed"] {
		t.Fatalf("queued %v, want ns/deleted and ns/changed", queued)
	}
	before := h.count("EnsureLoadBalancer")
	for k := range queued {
		h.mustSync(k)
	}
	h.mustSync("ns/kept")
	if got := h.count("EnsureLoadBalancer") - before; got != 2 {
		t.Errorf("EnsureLoadBalancer calls after the pass = %d, want 2 (the drifted ones only)", got)
	}
}

// Backends compare as sets with the applied providerIDs: order and
// repeats do not matter, nodes without a providerID carry no traffic, and
// a missing, extra or empty ID is a difference. One set serves every
// comparison of a pass, so each starts afresh.
func TestAppliedSetComparesAsSets(t *testing.T) {
	t.Parallel()
	applied := nodeSet{version: 7, ids: map[string]string{"n1": "fake://n1", "n2": "fake://n2", "n3": ""}}
	sets := appliedSets{}
	for _, tc := range []struct {
		cloud []string
		same  bool
	}{
		{[]string{"fake://n2", "fake://n1"}, true},
		{[]string{"fake://n1", "fake://n2", "fake://n1"}, true},
		{[]string{"fake://n1"}, false},
		{[]string{"fake://n1", "fake://n1"}, false},
		{[]string{"fake://n1", "fake://n2", "fake://n9"}, false},
		{[]string{"fake://n1", "fake://n2", ""}, false},
		{[]string{}, false},
		{[]string{"fake://n1", "fake://n2"}, true},
	} {
		if got := sets.of(applied).equals(tc.cloud); got != tc.same {
			t.Errorf("cloud %q against applied %v: same = %v, want %v", tc.cloud, applied.ids, got, tc.same)
		}
	}
	if sets.of(applied) != sets.of(nodeSet{version: 7, ids: applied.ids}) || len(sets) != 1 {
		t.Error("the records of one version did not share their set")
	}
	if !sets.of(nodeSet{version: 8}).equals(nil) {
		t.Error("an empty applied set differs from no backends")
	}
}
