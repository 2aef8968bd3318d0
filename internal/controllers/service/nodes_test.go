package service

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
)

func TestNodeTrackerVersion(t *testing.T) {
	t.Parallel()
	tr := newNodeTracker()
	tr.upsert(node("a"))
	s1 := tr.snapshot()
	hb := node("a")
	hb.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	tr.upsert(hb)
	s2 := tr.snapshot()
	if s1.version != s2.version {
		t.Error("a heartbeat changed the node set's version")
	}
	if s2.nodes[0] != hb {
		t.Error("snapshot does not carry the latest node object")
	}
	tr.upsert(node("b", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" }))
	s3 := tr.snapshot()
	if !sameNodes(s2, s3) {
		t.Error("an excluded node changed the eligible set")
	}
	tr.upsert(node("c"))
	s4 := tr.snapshot()
	if sameNodes(s3, s4) || !slices.Equal(names(s4.nodes), []string{"a", "c"}) {
		t.Errorf("nodes = %v", names(s4.nodes))
	}
	tr.remove("c")
	if s5 := tr.snapshot(); !sameNodes(s5, s3) {
		t.Errorf("after removal nodes = %v", names(s5.nodes))
	}
}

// Snapshots of one version share their identity map, so the records of
// many load balancers applied at that version hold one map between them;
// a heartbeat between two snapshots must not give the second its own.
func TestNodeTrackerSharesIdentityAcrossHeartbeats(t *testing.T) {
	t.Parallel()
	tr := newNodeTracker()
	for _, n := range []string{"c", "a", "b"} {
		tr.upsert(node(n))
	}
	s1 := tr.snapshot()
	hb := node("b")
	hb.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	tr.upsert(hb)
	s2 := tr.snapshot()
	if reflect.ValueOf(s1.ids).Pointer() != reflect.ValueOf(s2.ids).Pointer() {
		t.Error("a heartbeat gave the next snapshot its own identity map")
	}
	if !slices.Equal(names(s2.nodes), []string{"a", "b", "c"}) || s2.nodes[1] != hb {
		t.Errorf("after a heartbeat nodes = %v, want a, b (the latest object), c", names(s2.nodes))
	}
	tr.upsert(node("d"))
	s3 := tr.snapshot()
	if reflect.ValueOf(s3.ids).Pointer() == reflect.ValueOf(s2.ids).Pointer() {
		t.Fatal("a new version reused the old identity map")
	}
	if len(s2.ids) != 3 || len(s3.ids) != 4 {
		t.Errorf("identity maps hold %d and %d nodes, want 3 (unchanged since handed out) and 4", len(s2.ids), len(s3.ids))
	}
}

// A node pass queues only the Services whose applied node set differs.
func TestNodePassQueuesOnlyOutdated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "a"), lbService("ns", "b"), node("n1"))
	h.mustSync("ns/a")
	h.mustSync("ns/b")
	h.c.nodes.upsert(node("n2"))
	h.mustSync("ns/a") // a catches up on its own (e.g. a concurrent Service change)
	res, err := h.c.Reconcile(context.Background(), nodesKey)
	if err != nil || res != (reconcile.Result{}) {
		t.Fatalf("node pass = %+v, %v", res, err)
	}
	if n := h.q.Len(); n != 1 {
		t.Fatalf("queued %d Services, want only b", n)
	}
	k, _ := h.q.Get()
	if want := (key{Service: nn("ns/b")}); k != want {
		t.Errorf("queued %+v, want %+v", k, want)
	}
	h.q.Done(k)
	if got := testutil.ToFloat64(h.c.metrics.nodeSyncs); got != 1 {
		t.Errorf("%s = %v, want 1", MetricNodeSyncsTotal, got)
	}
}

// A RetryError is not a failure: the Service comes back after the delay
// the cloud asked for (at least kit.MinRetryAfter). Any other error is
// returned, for the queue's per-Service backoff.
func TestReconcileRetryErrorAndBackoff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	ctx := context.Background()
	k := key{Service: nn("ns/web")}

	h.lb.FailNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("provisioning", 2*time.Second))
	res, err := h.c.Reconcile(ctx, k)
	if err != nil || res.RequeueAfter != 2*time.Second {
		t.Errorf("after a RetryError of 2s: %+v, %v; want RequeueAfter 2s and no error", res, err)
	}
	h.lb.FailNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("provisioning", 0))
	if res, _ := h.c.Reconcile(ctx, k); res.RequeueAfter != kit.MinRetryAfter {
		t.Errorf("after a RetryError without delay: RequeueAfter %v, want %v", res.RequeueAfter, kit.MinRetryAfter)
	}
	h.lb.FailNext("EnsureLoadBalancer", errors.New("boom"))
	if res, err := h.c.Reconcile(ctx, k); err == nil || res != (reconcile.Result{}) {
		t.Errorf("after an error: %+v, %v; want the error, for the backoff", res, err)
	}
	if res, err := h.c.Reconcile(ctx, k); err != nil || res != (reconcile.Result{}) {
		t.Errorf("success: %+v, %v", res, err)
	}
	for result, want := range map[string]float64{kit.ResultRetry: 2, kit.ResultError: 1, kit.ResultSuccess: 1} {
		if got := testutil.ToFloat64(h.c.metrics.syncs.WithLabelValues(result)); got != want {
			t.Errorf("%s{result=%s} = %v, want %v", MetricSyncsTotal, result, got, want)
		}
	}
}
