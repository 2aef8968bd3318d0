package service

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	cloudproviderapi "k8s.io/cloud-provider/api"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestNodeTrackerVersion(t *testing.T) {
	tr := newNodeTracker()
	tr.upsert(node("a"))
	s1 := tr.snapshot()
	hb := node("a")
	hb.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	tr.upsert(hb)
	s2 := tr.snapshot()
	if s1.version != s2.version {
		t.Error("a heartbeat changed the node set's version")
	}
	if s2.nodes[0] != hb {
		t.Error("snapshot does not carry the latest node object")
	}
	tr.upsert(node("b", func(n *v1.Node) { n.Labels[v1.LabelNodeExcludeBalancers] = "true" }))
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

// A node pass queues only the Services whose applied node set differs.
func TestNodePassQueuesOnlyOutdated(t *testing.T) {
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

// A lone node change after quiet queues its pass at once; the changes of
// a burst that follows join one pass at the end of the window, and changes
// that cannot alter a node set schedule nothing.
func TestNodeEventsCoalesce(t *testing.T) {
	const delay = time.Second
	h := newHarness(t, Config{NodeSyncDelay: delay})
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	h.c.now = clk.Now
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[key](),
		workqueue.TypedRateLimitingQueueConfig[key]{Clock: clk})
	t.Cleanup(q.ShutDown)
	ctx := context.Background()
	hd := h.c.nodeHandler()
	takePass := func(what string) {
		t.Helper()
		waitFor(t, what, func() bool { return q.Len() == 1 })
		k, _ := q.Get()
		if k != nodesKey {
			t.Errorf("%s: queued %+v, want the node pass", what, k)
		}
		q.Done(k)
	}

	// A heartbeat-like update of an unknown node changes nothing.
	hb := node("z")
	hd.Update(ctx, event.TypedUpdateEvent[*v1.Node]{ObjectOld: hb, ObjectNew: hb}, q)
	if q.Len() != 0 {
		t.Fatal("a change that cannot alter a node set queued a pass")
	}

	// The first change after quiet goes out at once, without the clock moving.
	hd.Create(ctx, event.TypedCreateEvent[*v1.Node]{Object: node("a")}, q)
	if q.Len() != 1 {
		t.Fatalf("lone change: %d passes queued at once, want 1", q.Len())
	}
	takePass("the lone change's pass")

	// A burst that follows within the window is coalesced into one pass,
	// due one window after the first.
	for i := range 20 {
		clk.Step(delay / 40) // the burst spreads over half the window
		hd.Create(ctx, event.TypedCreateEvent[*v1.Node]{Object: node(string(rune('b' + i)))}, q)
	}
	if q.Len() != 0 {
		t.Fatal("a burst's pass ran before the window ended")
	}
	clk.Step(delay / 2) // one window after the lone change's pass
	// The queue's loop may have read the clock before that step and set
	// its timer from there, so nudge the clock until the pass is due.
	waitFor(t, "the burst's pass", func() bool {
		if q.Len() == 0 {
			clk.Step(delay / 100)
		}
		return q.Len() > 0
	})
	takePass("the burst's pass")
	clk.Step(delay)
	if q.Len() != 0 {
		t.Errorf("%d more passes after the burst's one", q.Len())
	}

	// After quiet again, the next change is immediate once more.
	hd.Delete(ctx, event.TypedDeleteEvent[*v1.Node]{Object: node("b")}, q)
	if q.Len() != 1 {
		t.Fatalf("change after quiet: %d passes queued at once, want 1", q.Len())
	}
	takePass("the change after quiet")
	if got := len(h.c.nodes.snapshot().nodes); got != 21 {
		t.Errorf("tracked %d nodes, want 21", got)
	}
}

// A steady stream of node changes costs one pass per window, never more,
// and the first goes out at once.
func TestNodePacerSteadyStream(t *testing.T) {
	const delay = time.Second
	start := time.Unix(1_700_000_000, 0)
	p := &nodePacer{delay: delay}
	q := &dueQueue{due: map[time.Time]bool{}}
	// One change every 100 ms for 10 s.
	for i := range 100 {
		now := start.Add(time.Duration(i) * delay / 10)
		q.now = now
		p.schedule(q, now)
	}
	if !q.due[start] {
		t.Error("the first change's pass was not queued at once")
	}
	// Passes at 0 s, 1 s, ..., 10 s: one per window.
	if len(q.due) != 11 {
		t.Errorf("%d passes for 100 changes over 10 s, want 11", len(q.due))
	}
	for at := range q.due {
		if d := at.Sub(start); d%delay != 0 {
			t.Errorf("a pass at %v, not at a window boundary", d)
		}
	}
}

// dueQueue records when node passes would run.
type dueQueue struct {
	queue
	now time.Time
	due map[time.Time]bool
}

func (q *dueQueue) Add(key)                         { q.due[q.now] = true }
func (q *dueQueue) AddAfter(_ key, d time.Duration) { q.due[q.now.Add(d)] = true }

// waitFor polls cond, which a queue's own goroutine makes true.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// A RetryError is not a failure: the Service comes back after the delay
// the cloud asked for (at least minRetryAfter). Any other error is
// returned, for the queue's per-Service backoff.
func TestReconcileRetryErrorAndBackoff(t *testing.T) {
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	ctx := context.Background()
	k := key{Service: nn("ns/web")}

	h.lb.failNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("provisioning", 2*time.Second))
	res, err := h.c.Reconcile(ctx, k)
	if err != nil || res.RequeueAfter != 2*time.Second {
		t.Errorf("after a RetryError of 2s: %+v, %v; want RequeueAfter 2s and no error", res, err)
	}
	h.lb.failNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("provisioning", 0))
	if res, _ := h.c.Reconcile(ctx, k); res.RequeueAfter != minRetryAfter {
		t.Errorf("after a RetryError without delay: RequeueAfter %v, want %v", res.RequeueAfter, minRetryAfter)
	}
	h.lb.failNext("EnsureLoadBalancer", errors.New("boom"))
	if res, err := h.c.Reconcile(ctx, k); err == nil || res != (reconcile.Result{}) {
		t.Errorf("after an error: %+v, %v; want the error, for the backoff", res, err)
	}
	if res, err := h.c.Reconcile(ctx, k); err != nil || res != (reconcile.Result{}) {
		t.Errorf("success: %+v, %v", res, err)
	}
	for result, want := range map[string]float64{resultRetry: 2, resultError: 1, resultSuccess: 1} {
		if got := testutil.ToFloat64(h.c.metrics.syncs.WithLabelValues(result)); got != want {
			t.Errorf("%s{result=%s} = %v, want %v", MetricSyncsTotal, result, got, want)
		}
	}
}
