package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
)

// observeSlack is how much later than its deletion the test may see a
// Node gone (deletionWatch polls every 100 ms); the spans between
// deletions it measures are shorter by up to that than the true ones.
const observeSlack = time.Second

// capSurvivesFailover: five Nodes go NotReady with their instances gone at
// once, and the controller manager is SIGKILLed twice while the deletion
// cap holds some of them back; a new process leads after each kill. The
// deletion cap's record, kept in the API server, carries the window
// across the leader changes: no span of one window sees more deletions
// than the cap, and all five go once the window has moved.
func capSurvivesFailover(t *testing.T, w *world, leader *replica) *replica {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	var nodes []string
	for i := range 5 {
		nodes = append(nodes, fmt.Sprintf("capfo-%d", i))
	}
	w.addNodes(nodes...)
	waitFor(ctx, t, "the cap-failover nodes to be initialized", convergeTimeout, w.converged)
	limit := w.clusterDeletionCap(t)
	if limit >= len(nodes) {
		t.Fatalf("the cap allows %d deletions per window: five gone Nodes would not test it", limit)
	}
	seen := watchDeletions(ctx, w, nodes)
	started := time.Now()
	for _, n := range nodes {
		w.setReady(n, corev1.ConditionFalse)
	}
	for _, n := range nodes {
		w.deleteInstance(n)
	}
	waitFor(ctx, t, "a first deletion and the cap holding the rest", convergeTimeout, func(ctx context.Context) (bool, string) {
		held := w.eventCount(ctx, nodelifecycle.ReasonDeletionCapped, nodes...)
		return seen.count() > 0 && held > 0, fmt.Sprintf("%d deleted, %d %s events", seen.count(), held, nodelifecycle.ReasonDeletionCapped)
	})
	for kill := 1; kill <= 2; kill++ {
		if n := seen.count(); n == len(nodes) {
			t.Fatalf("all %d Nodes deleted before SIGKILL %d: the cap of %d per %s did not hold", n, kill, limit, deletionWindow)
		}
		w.killForNewLeader(t, leader, kill, func() bool { return seen.count() == len(nodes) })
	}
	d := w.settle(t, "cap-failover", started)
	times := seen.times()
	for i := 0; i+limit < len(times); i++ {
		if span := times[i+limit].Sub(times[i]); span < deletionWindow-observeSlack {
			t.Errorf("%d Nodes deleted within %s: the cap is %d per %s window (deletions at %v)", limit+1, span.Round(time.Millisecond), limit, deletionWindow, offsets(started, times))
		}
	}
	w.checkDeletionRecord(t)
	t.Logf("fault-safety scenario=cap-failover sigkills=2 cap=%d window=%s deleted=%d deletions-at=%v capped-events=%d converged-seconds=%.1f",
		limit, deletionWindow, len(times), offsets(started, times), w.eventCount(ctx, nodelifecycle.ReasonDeletionCapped, nodes...), d.Seconds())
	return leader
}

// killForNewLeader SIGKILLs leader's process, which its supervisor starts
// again, and waits until a new process holds the lease and has run two
// monitor periods (it has read the record and decided), or has deleted
// every Node (allDone), after which periods list no more.
func (w *world) killForNewLeader(t *testing.T, leader *replica, kill int, allDone func() bool) {
	t.Helper()
	holder := w.leaseHolder(t)
	leader.kill(true)
	t.Logf("SIGKILL %d of the leader %q", kill, holder)
	waitFor(w.ctx, t, fmt.Sprintf("a new leader after SIGKILL %d", kill), convergeTimeout, func(ctx context.Context) (bool, string) {
		l, err := w.cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && h != holder, "holder " + h
	})
	before, err := w.answered(w.ctx, 200, "ListInstances")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(w.ctx, t, "two monitor periods of the new leader", convergeTimeout, func(ctx context.Context) (bool, string) {
		n, err := w.answered(ctx, 200, "ListInstances")
		if err != nil {
			return false, err.Error()
		}
		return n-before >= 2 || allDone(), fmt.Sprintf("%d instance lists", n-before)
	})
}

// clusterDeletionCap is the cluster's cap with the replicas' flags (the
// default shares and minimum) for the world's own Nodes now: the census
// only shrinks as they are deleted, so no later period allows more. The
// zone's cap is no lower: every Node is in one zone, whose share is twice
// the cluster's.
func (w *world) clusterDeletionCap(t *testing.T) int {
	t.Helper()
	list, err := w.cs.CoreV1().Nodes().List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	own := 0
	for _, n := range list.Items {
		if _, foreign := w.foreign[n.Name]; !foreign {
			own++
		}
	}
	w.mu.Unlock()
	return max(nodelifecycle.DefaultMinDeletions, int(nodelifecycle.DefaultMaxDeletionShare*float64(own)))
}

// checkDeletionRecord: the record is where the next leader reads it, the
// ConfigMap beside the Lease, marked as Stratus'.
func (w *world) checkDeletionRecord(t *testing.T) {
	t.Helper()
	name := nodelifecycle.RecordName("cloud-controller-manager")
	cm, err := w.cs.CoreV1().ConfigMaps("kube-system").Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("the deletion record kube-system/%s: %v", name, err)
		return
	}
	if cm.Labels[nodelifecycle.LabelManagedBy] != nodelifecycle.ManagedBy {
		t.Errorf("the deletion record's labels %v do not mark it as Stratus'", cm.Labels)
	}
	t.Logf("deletion record %s: %s", name, cm.Data[nodelifecycle.RecordKey])
}

// deletionWatch notes when each of a set of Nodes is first seen gone.
type deletionWatch struct {
	mu   sync.Mutex
	gone map[string]time.Time
}

// watchDeletions polls the Nodes every 100 ms until ctx ends.
func watchDeletions(ctx context.Context, w *world, nodes []string) *deletionWatch {
	dw := &deletionWatch{gone: map[string]time.Time{}}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			list, err := w.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err == nil {
				now := time.Now()
				dw.mu.Lock()
				for _, n := range nodes {
					if _, noted := dw.gone[n]; !noted && !slices.ContainsFunc(list.Items, func(x corev1.Node) bool { return x.Name == n }) {
						dw.gone[n] = now
					}
				}
				dw.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return dw
}

func (dw *deletionWatch) count() int {
	dw.mu.Lock()
	defer dw.mu.Unlock()
	return len(dw.gone)
}

// times are the deletions seen, in order.
func (dw *deletionWatch) times() []time.Time {
	dw.mu.Lock()
	defer dw.mu.Unlock()
	var out []time.Time
	for _, at := range dw.gone {
		out = append(out, at)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// offsets shows times as seconds since start.
func offsets(start time.Time, times []time.Time) []string {
	out := make([]string, len(times))
	for i, at := range times {
		out[i] = fmt.Sprintf("%.1fs", at.Sub(start).Seconds())
	}
	return out
}
