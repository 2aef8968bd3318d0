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
	queued := orphanPass(t, h)
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

// A provider that leaves a node out of its load balancers (here: one
// whose instance the cloud cannot target) is ensured once, not on every
// pass; a difference made again behind the controller's back after a
// repair held is repaired again, and a node joining does not make the
// provider's choice look new.
func TestDriftOfProvidersOwnChoiceRepairedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"), node("n2"), node("ghost"))
	h.lb.NoTarget = map[string]bool{"fake://ghost": true}
	h.mustSync("ns/web")
	pass := func() map[string]bool {
		t.Helper()
		queued := orphanPass(t, h)
		for k := range queued {
			h.mustSync(k)
		}
		return queued
	}
	if q := pass(); !q["ns/web"] {
		t.Fatalf("first pass queued %v: the difference was not repaired once", q)
	}
	for i := range 3 {
		if q := pass(); len(q) != 0 {
			t.Fatalf("pass %d queued %v: the provider's own choice of backends was taken for drift again", i+2, q)
		}
	}
	// Behind the controller's back: n2 removed. Repaired, then quiet.
	web, _ := h.balancer("ns/web")
	web.Backends = []string{"fake://n1"}
	h.lb.PutBalancer(web)
	if q := pass(); !q["ns/web"] {
		t.Fatalf("queued %v after n2 was removed in the cloud, want ns/web", q)
	}
	if web, _ := h.balancer("ns/web"); len(web.Backends) != 2 {
		t.Fatalf("backends %v after the repair, want n1 and n2", web.Backends)
	}
	if q := pass(); len(q) != 0 {
		t.Fatalf("queued %v after the repair held", q)
	}
	// The same removal again: still drift, as the repair held in between.
	web, _ = h.balancer("ns/web")
	web.Backends = []string{"fake://n1"}
	h.lb.PutBalancer(web)
	if q := pass(); !q["ns/web"] {
		t.Fatalf("queued %v after n2 was removed in the cloud a second time, want ns/web", q)
	}
	if q := pass(); len(q) != 0 {
		t.Fatalf("queued %v after the second repair held", q)
	}
	// A node joins: the Service's hosts are updated, ghost still left out.
	h.c.nodes.upsert(node("n3"))
	h.mustSync("ns/web")
	if web, _ := h.balancer("ns/web"); len(web.Backends) != 3 {
		t.Fatalf("backends %v after n3 joined, want n1, n2 and n3", web.Backends)
	}
	if q := pass(); len(q) != 0 {
		t.Fatalf("queued %v after n3 joined: the provider's choice was taken for new drift", q)
	}
}

// orphanPass runs one orphan pass and returns the Services it queued,
// taken off the queue.
func orphanPass(t *testing.T, h *harness) map[string]bool {
	t.Helper()
	if err := h.c.collectOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	queued := map[string]bool{}
	for h.q.Len() > 0 {
		k, _ := h.q.Get()
		queued[k.Service.String()] = true
		h.q.Done(k)
	}
	return queued
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
