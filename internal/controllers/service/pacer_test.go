package service

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// simQueue stands in for the controller's workqueue on a fake clock: one
// entry per key, due at the earliest time asked, as client-go's delaying
// queue keeps it. run hands the due keys to the controller in due order,
// as workers would, and feeds a RequeueAfter back.
type simQueue struct {
	queue
	clk *clocktesting.FakeClock
	due map[key]time.Time
	// passes records when a node pass ran (was not sent back to wait).
	passes []time.Time
}

func (q *simQueue) Add(k key) { q.AddAfter(k, 0) }

func (q *simQueue) AddAfter(k key, d time.Duration) {
	at := q.clk.Now().Add(d)
	if cur, ok := q.due[k]; !ok || at.Before(cur) {
		q.due[k] = at
	}
}

func (q *simQueue) Len() int { return len(q.due) }

// next returns the key due first, if it is due by until.
func (q *simQueue) next(until time.Time) (key, bool) {
	var best key
	var at time.Time
	found := false
	for k, t := range q.due {
		if t.After(until) {
			continue
		}
		// Ties: the node pass first, then Services by name, so runs are
		// deterministic.
		if !found || t.Before(at) || (t.Equal(at) && keyLess(k, best)) {
			best, at, found = k, t, true
		}
	}
	return best, found
}

func keyLess(a, b key) bool {
	if (a.Pass != "") != (b.Pass != "") {
		return a.Pass != ""
	}
	return a.Pass+a.Service.String() < b.Pass+b.Service.String()
}

// run reconciles every key due by until, moving the clock to each one's
// time, and leaves the clock at until.
func (q *simQueue) run(t *testing.T, c *Controller, until time.Time) {
	t.Helper()
	for {
		k, ok := q.next(until)
		if !ok {
			break
		}
		if at := q.due[k]; at.After(q.clk.Now()) {
			q.clk.SetTime(at)
		}
		delete(q.due, k)
		res, err := c.Reconcile(context.Background(), k)
		if err != nil {
			t.Fatalf("reconcile %+v: %v", k, err)
		}
		if res.RequeueAfter > 0 {
			q.AddAfter(k, res.RequeueAfter)
		} else if k == nodesKey {
			q.passes = append(q.passes, q.clk.Now())
		}
	}
	if until.After(q.clk.Now()) {
		q.clk.SetTime(until)
	}
}

// pacerRig is a controller with synced load balancers, driven through its
// node handler on a fake clock.
type pacerRig struct {
	h   *harness
	q   *simQueue
	clk *clocktesting.FakeClock
	t0  time.Time
}

func newPacerRig(t *testing.T, services int, delay time.Duration) *pacerRig {
	t.Helper()
	objs := []client.Object{node("n1"), node("n2")}
	for i := range services {
		objs = append(objs, lbService("ns", fmt.Sprintf("s%02d", i)))
	}
	h := newHarness(t, Config{NodeSyncDelay: delay}, objs...)
	t0 := time.Unix(1_700_000_000, 0)
	clk := clocktesting.NewFakeClock(t0)
	h.c.now = clk.Now
	q := &simQueue{clk: clk, due: map[key]time.Time{}}
	var qi queue = q
	h.c.queue.Set(qi)
	for i := range services {
		h.mustSync(fmt.Sprintf("ns/s%02d", i))
	}
	return &pacerRig{h: h, q: q, clk: clk, t0: t0}
}

// at runs the queue until t0+d.
func (r *pacerRig) at(t *testing.T, d time.Duration) { r.q.run(t, r.h.c, r.t0.Add(d)) }

func (r *pacerRig) register(name string) {
	n := joiningNode(name)
	r.h.c.nodeHandler().Create(context.Background(), event.TypedCreateEvent[*corev1.Node]{Object: n}, r.q)
}

func (r *pacerRig) initialize(name string) {
	old := joiningNode(name)
	r.h.c.nodeHandler().Update(context.Background(), event.TypedUpdateEvent[*corev1.Node]{ObjectOld: old, ObjectNew: node(name)}, r.q)
}

// updates returns the UpdateLoadBalancer calls per Service.
func (r *pacerRig) updates() map[string]int {
	out := map[string]int{}
	for _, c := range r.h.lb.CallLog() {
		if c.Op == "UpdateLoadBalancer" {
			out[c.Object]++
		}
	}
	return out
}

// joiningNode is a node as the kubelet registers it with an external cloud
// provider: tainted uninitialized, without a providerID.
func joiningNode(name string) *corev1.Node {
	return node(name, func(n *corev1.Node) {
		n.Spec.ProviderID = ""
		n.Spec.Taints = []corev1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	})
}

// A burst of joins costs each load balancer one UpdateLoadBalancer: nodes
// register close together and are initialized at different times (here
// 150 ms apart, as a cloud node controller's list batches do); the pass
// waits for the last initialization, and every load balancer gets the
// whole burst at once.
func TestBurstOfJoinsCostsOneUpdatePerLoadBalancer(t *testing.T) {
	t.Parallel()
	const services, joins = 5, 20
	r := newPacerRig(t, services, time.Second)
	for i := range joins {
		r.at(t, time.Duration(i)*50*time.Millisecond)
		r.register(fmt.Sprintf("j%02d", i))
	}
	var last time.Duration
	for i := range joins {
		last = time.Second + time.Duration(i)*150*time.Millisecond
		r.at(t, last)
		r.initialize(fmt.Sprintf("j%02d", i))
	}
	r.at(t, time.Minute)

	for i := range services {
		name := fmt.Sprintf("ns/s%02d", i)
		if got := r.updates()[name]; got != 1 {
			t.Errorf("%s: %d UpdateLoadBalancer calls for a burst of %d joins, want 1", name, got, joins)
		}
		if got := len(r.h.nodesOf(fmt.Sprintf("ns/s%02d", i))); got != 2+joins {
			t.Errorf("%s: load balancer has %d nodes, want %d", name, got, 2+joins)
		}
	}
	if len(r.q.passes) != 1 {
		t.Fatalf("node passes at %v, want one", r.q.passes)
	}
	// Due a settle time after the last initialization.
	if got, want := r.q.passes[0].Sub(r.t0), last+r.h.c.nodePacer.settle; got != want {
		t.Errorf("the burst's pass ran at %v, want %v (the last change + %v)", got, want, r.h.c.nodePacer.settle)
	}
}

// While the cloud does not push back, a burst is not held for its last
// change: each initialization is sent at once (the joining nodes still
// hold a pass until they are initialized), so the last node reaches every
// load balancer at its initialization, not a settle time later.
func TestBurstWithoutPushbackGoesOutAtOnce(t *testing.T) {
	t.Parallel()
	const services, joins = 3, 4
	r := newPacerRig(t, services, time.Second)
	r.h.c.nodePacer.batching = func() bool { return false }
	for i := range joins {
		r.register(fmt.Sprintf("j%02d", i))
	}
	r.at(t, 500*time.Millisecond)
	if n := len(r.updates()); n != 0 {
		t.Fatalf("%d load balancers updated while every joining node is uninitialized", n)
	}
	var last time.Duration
	for i := range joins {
		last = time.Second + time.Duration(i)*150*time.Millisecond
		r.at(t, last)
		r.initialize(fmt.Sprintf("j%02d", i))
		r.at(t, last) // the clock does not move
	}
	if len(r.q.passes) == 0 || !r.q.passes[len(r.q.passes)-1].Equal(r.t0.Add(last)) {
		t.Fatalf("passes at %v, want the last at the last initialization (%v)", r.q.passes, last)
	}
	for i := range services {
		name := fmt.Sprintf("ns/s%02d", i)
		if got := len(r.h.nodesOf(name)); got != 2+joins {
			t.Errorf("%s: load balancer has %d nodes at the last initialization, want %d", name, got, 2+joins)
		}
	}
	// The joins were held only while a node was still uninitialized: the
	// first three initializations left others joining.
	if got := r.updates()["ns/s00"]; got != 1 {
		t.Errorf("ns/s00: %d updates, want 1: the pass waits while nodes are joining", got)
	}
}

// A lone join (a node registers, then is initialized, with no other
// change nearby) is sent to every load balancer at once: the pass and the
// updates run without the clock moving.
func TestLoneJoinGoesOutAtOnce(t *testing.T) {
	t.Parallel()
	const services = 3
	r := newPacerRig(t, services, time.Second)
	r.register("lone")
	r.at(t, 300*time.Millisecond)
	if n := len(r.updates()); n != 0 {
		t.Fatalf("%d load balancers updated for a node still being initialized", n)
	}
	r.initialize("lone")
	r.at(t, 300*time.Millisecond) // the clock does not move
	for i := range services {
		if got := r.updates()[fmt.Sprintf("ns/s%02d", i)]; got != 1 {
			t.Errorf("s%02d: %d updates at once after the lone join, want 1", i, got)
		}
	}
	if len(r.q.passes) != 1 || !r.q.passes[0].Equal(r.t0.Add(300*time.Millisecond)) {
		t.Errorf("passes at %v, want one at the initialization", r.q.passes)
	}

	// After a quiet period, a lone removal goes out at once too.
	r.at(t, 5*time.Second)
	r.h.c.nodeHandler().Delete(context.Background(), event.TypedDeleteEvent[*corev1.Node]{Object: node("n1")}, r.q)
	r.at(t, 5*time.Second)
	for i := range services {
		if got := r.updates()[fmt.Sprintf("ns/s%02d", i)]; got != 2 {
			t.Errorf("s%02d: %d updates after the lone removal, want 2", i, got)
		}
	}
}

// The Services a lone change's pass queued and the workers have not
// reached when a burst begins are left to the burst's pass: they are
// updated once, with the whole burst.
func TestBurstDefersUpdatesQueuedBeforeIt(t *testing.T) {
	t.Parallel()
	const services = 6
	r := newPacerRig(t, services, time.Second)
	r.h.c.nodeHandler().Create(context.Background(), event.TypedCreateEvent[*corev1.Node]{Object: node("a")}, r.q)
	// The pass runs and queues every Service; two are updated before a
	// burst of registrations begins.
	if k, _ := r.q.next(r.clk.Now()); k != nodesKey {
		t.Fatalf("first due key %+v, want the node pass", k)
	}
	delete(r.q.due, nodesKey)
	if _, err := r.h.c.Reconcile(context.Background(), nodesKey); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ns/s00", "ns/s01"} {
		delete(r.q.due, key{Service: nn(name)})
		if _, err := r.h.c.Reconcile(context.Background(), key{Service: nn(name)}); err != nil {
			t.Fatal(err)
		}
	}
	r.register("b")
	r.register("c")
	r.at(t, 200*time.Millisecond)
	r.initialize("b")
	r.at(t, 400*time.Millisecond)
	r.initialize("c")
	r.at(t, time.Minute)

	for i := range services {
		name := fmt.Sprintf("ns/s%02d", i)
		want := 1
		if i < 2 {
			want = 2 // updated for a, then for the burst
		}
		if got := r.updates()[name]; got != want {
			t.Errorf("%s: %d updates, want %d", name, got, want)
		}
		if got := r.h.nodesOf(fmt.Sprintf("ns/s%02d", i)); !slices.Contains(got, "c") {
			t.Errorf("%s: nodes %v lack the burst's last node", name, got)
		}
	}
}

// A node that registers and is never initialized holds a pass back for
// at most maxHold; then the load balancers get the other changes.
func TestStuckJoiningNodeHoldsAtMostMaxHold(t *testing.T) {
	t.Parallel()
	r := newPacerRig(t, 2, time.Second)
	r.register("stuck")
	r.at(t, time.Second)
	// Another node leaves the load balancers (exclusion label).
	excluded := node("n2", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" })
	r.h.c.nodeHandler().Update(context.Background(), event.TypedUpdateEvent[*corev1.Node]{ObjectOld: node("n2"), ObjectNew: excluded}, r.q)
	r.at(t, time.Minute)
	maxHold := r.h.c.nodePacer.maxHold
	if len(r.q.passes) != 1 || r.q.passes[0].Sub(r.t0) != maxHold {
		t.Fatalf("passes at %v, want one at %v", r.q.passes, maxHold)
	}
	if got := r.updates()["ns/s00"]; got != 1 {
		t.Errorf("%d updates, want 1", got)
	}
}

// A stream of changes without end (one every 100 ms for 20 s) updates the
// load balancers at once for the first, then no change waits longer than
// maxHold, and passes are no more frequent than that.
func TestNodeChangeStreamPassesEveryMaxHold(t *testing.T) {
	t.Parallel()
	r := newPacerRig(t, 1, time.Second)
	maxHold := r.h.c.nodePacer.maxHold
	for i := range 200 {
		r.at(t, time.Duration(i)*100*time.Millisecond)
		name := fmt.Sprintf("m%03d", i)
		r.h.c.nodeHandler().Create(context.Background(), event.TypedCreateEvent[*corev1.Node]{Object: node(name)}, r.q)
	}
	r.at(t, time.Minute)
	if len(r.q.passes) == 0 || !r.q.passes[0].Equal(r.t0) {
		t.Fatalf("passes %v: the first change's pass did not run at once", r.q.passes)
	}
	// No change waits longer than maxHold for a pass.
	for i := range 200 {
		c := r.t0.Add(time.Duration(i) * 100 * time.Millisecond)
		j := slices.IndexFunc(r.q.passes, func(p time.Time) bool { return !p.Before(c) })
		if j < 0 || r.q.passes[j].Sub(c) > maxHold {
			t.Fatalf("the change at %v waited for a pass longer than %v (passes %v)", c.Sub(r.t0), maxHold, r.q.passes)
		}
	}
	// 20 s of changes: the first at once, one per maxHold, one at the end.
	if n, most := len(r.q.passes), 2+int(20*time.Second/maxHold); n > most {
		t.Errorf("%d passes, want at most %d", n, most)
	}
	if got := r.updates()["ns/s00"]; got != len(r.q.passes) {
		t.Errorf("%d updates for %d passes", got, len(r.q.passes))
	}
}
