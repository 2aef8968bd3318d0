package node

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/ownership"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// TestForeignNodesNotInitialized: under an ownership policy for the fake
// platform, a Node of another platform is neither queued, initialized nor
// refreshed, and counts as foreign until it is deleted; the provider's own
// Node is initialized.
func TestForeignNodesNotInitialized(t *testing.T) {
	pol, err := ownership.New([]string{"fake"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign := newNode("onprem")
	foreign.Spec.ProviderID = "onprem://rack1/onprem"
	h := newHarness(t, cloudfake.New(instance("own", "10.0.0.1", ""), instance("onprem", "10.0.0.2", "")), false, newNode("own"), foreign)
	h.c.ownership = pol
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h.c.observe(foreign, q)
	h.c.observe(h.node(t, "own"), q)
	if q.Len() != 1 {
		t.Errorf("queued %d nodes, want only the provider's own", q.Len())
	}
	if got := testutil.ToFloat64(h.c.metrics.foreign); got != 1 {
		t.Errorf("%s = %v, want 1", MetricForeignNodes, got)
	}
	for _, name := range []string{"own", "onprem"} {
		if err := h.c.sync(context.Background(), name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	if isUninitialized(h.node(t, "own")) {
		t.Error("the provider's own node was not initialized")
	}
	if n := h.node(t, "onprem"); !isUninitialized(n) || len(n.Status.Addresses) != 0 {
		t.Errorf("foreign node written: taints %v, addresses %v", n.Spec.Taints, n.Status.Addresses)
	}
	// A foreign Node that somehow lost its taint is not refreshed either.
	res, err := h.c.Refresh(context.Background())
	if err != nil || res.Nodes != 1 {
		t.Errorf("refresh: %+v %v; want the provider's one node only", res, err)
	}
	h.c.forgetForeign("onprem")
	if got := testutil.ToFloat64(h.c.metrics.foreign); got != 0 {
		t.Errorf("%s = %v after deletion, want 0", MetricForeignNodes, got)
	}
}
