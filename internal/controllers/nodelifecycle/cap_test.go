package nodelifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// capHarness builds a controller with the given cap over nodes, on a fake
// clock, with a list-capable cloud that knows alive's instances.
func capHarness(t *testing.T, capc DeletionCap, alive []string, nodes ...*corev1.Node) (*harness, *clocktesting.FakeClock) {
	t.Helper()
	fc := cloudfake.New()
	for _, name := range alive {
		fc.PutInstance(inst(name, false))
	}
	objs := make([]client.Object, 0, len(nodes))
	for _, n := range nodes {
		objs = append(objs, n)
	}
	cl := fake.NewClientBuilder().WithObjects(objs...).WithIndex(&corev1.Node{}, attentionField, needsAttention).Build()
	rec := events.NewFakeRecorder(1000)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := New(Deps{Deps: kit.Deps{Client: cl, Recorder: rec, Clock: clk}, Instances: fc, Lister: fc}, Config{Period: 1, Cap: capc})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{c: c, client: cl, rec: rec}, clk
}

func zoned(name, zone string, ready corev1.ConditionStatus) *corev1.Node {
	n := node(name, ready)
	n.Labels = map[string]string{corev1.LabelTopologyZone: zone}
	return n
}

func (h *harness) count(t *testing.T) int {
	t.Helper()
	var l corev1.NodeList
	if err := h.client.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// fortyNodesTenGone is 40 Nodes over four zones: n00..n09 NotReady, their
// instances gone, the other 30 Ready, with the names of those alive.
func fortyNodesTenGone() (nodes []*corev1.Node, alive []string) {
	for i := range 40 {
		name := fmt.Sprintf("n%02d", i)
		ready := corev1.ConditionTrue
		if i < 10 {
			ready = corev1.ConditionFalse
		} else {
			alive = append(alive, name)
		}
		nodes = append(nodes, zoned(name, fmt.Sprintf("z%d", i%4), ready))
	}
	return nodes, alive
}

// TestCapHoldsClusterShare: 40 Nodes, 10 of them NotReady with their
// instances gone. A 10% cap deletes 4 in the window, holds the other 6
// with a warning each, and deletes them once the window has passed.
func TestCapHoldsClusterShare(t *testing.T) {
	nodes, alive := fortyNodesTenGone()
	h, clk := capHarness(t, DeletionCap{MaxShare: 0.1, MaxZoneShare: 1, Min: 1, Window: 10 * time.Minute}, alive, nodes...)
	sum, err := h.c.sync(context.Background(), pass{})
	if err != nil || sum.Deleted != 4 || sum.Held != 6 {
		t.Fatalf("first period: %+v %v; want 4 deleted, 6 held", sum, err)
	}
	if ev := h.events(); strings.Count(ev, "Warning "+ReasonDeletionCapped) != 6 || !strings.Contains(ev, "--node-deletion-max-share") {
		t.Errorf("events %q: want 6 %s warnings naming the flag", ev, ReasonDeletionCapped)
	}
	if got := testutil.ToFloat64(h.c.metrics.held.WithLabelValues("cluster")); got != 6 {
		t.Errorf("held (cluster) = %v, want 6", got)
	}
	if got := testutil.ToFloat64(h.c.metrics.heldNow); got != 6 {
		t.Errorf("held now = %v, want 6", got)
	}
	// Within the window nothing more goes.
	clk.SetTime(clk.Now().Add(9 * time.Minute))
	if sum, _ := h.c.sync(context.Background(), pass{}); sum.Deleted != 0 || sum.Held != 6 {
		t.Fatalf("within the window: %+v; want nothing deleted", sum)
	}
	// Past it, the cap is a share of the 36 Nodes left: 3 more.
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	if sum, _ := h.c.sync(context.Background(), pass{}); sum.Deleted != 3 || sum.Held != 3 {
		t.Fatalf("after the window: %+v; want 3 deleted, 3 held", sum)
	}
	if got := h.count(t); got != 33 {
		t.Errorf("%d nodes left, want 33", got)
	}
}

// TestCapHoldsZoneShare: a zone outage. Zone a's 10 Nodes are all NotReady
// and gone; the zone's 20% cap deletes 2 of them although the cluster's cap
// would allow more. Zone b's gone Node is not held by zone a's count.
func TestCapHoldsZoneShare(t *testing.T) {
	var nodes []*corev1.Node
	var alive []string
	for i := range 10 {
		nodes = append(nodes, zoned(fmt.Sprintf("a%d", i), "a", corev1.ConditionFalse))
	}
	for i := range 40 {
		name := fmt.Sprintf("b%d", i)
		ready := corev1.ConditionTrue
		if i == 0 {
			ready = corev1.ConditionFalse
		} else {
			alive = append(alive, name)
		}
		nodes = append(nodes, zoned(name, "b", ready))
	}
	h, _ := capHarness(t, DeletionCap{MaxShare: 1, MaxZoneShare: 0.2, Min: 1}, alive, nodes...)
	sum, err := h.c.sync(context.Background(), pass{})
	if err != nil || sum.Deleted != 3 || sum.Held != 8 {
		t.Fatalf("%+v %v; want 3 deleted (2 of zone a, b0), 8 held", sum, err)
	}
	if _, ok := h.get(t, "b0"); ok {
		t.Error("b0 held by zone a's cap")
	}
	if got := testutil.ToFloat64(h.c.metrics.held.WithLabelValues("zone")); got != 8 {
		t.Errorf("held (zone) = %v, want 8", got)
	}
}

// TestCapDefaults: the zero cap takes the documented defaults, and a small
// cluster still loses its dead Nodes (the minimum per window).
func TestCapDefaults(t *testing.T) {
	h, _ := capHarness(t, DeletionCap{}, []string{"c"}, node("a", corev1.ConditionFalse), node("b", corev1.ConditionFalse), node("c", corev1.ConditionTrue))
	want := DeletionCap{Window: DefaultDeletionWindow, MaxShare: DefaultMaxDeletionShare, MaxZoneShare: DefaultMaxZoneDeletionShare, Min: DefaultMinDeletions}
	if h.c.cfg.Cap != want {
		t.Errorf("cap %+v, want %+v", h.c.cfg.Cap, want)
	}
	if sum, err := h.c.sync(context.Background(), pass{}); err != nil || sum.Deleted != 2 {
		t.Errorf("%+v %v; want both dead nodes of a 3-node cluster deleted", sum, err)
	}
}

func TestCapRefusesBadValues(t *testing.T) {
	for _, bad := range []DeletionCap{{MaxShare: 1.5}, {MaxZoneShare: -0.1}, {Window: -time.Second}, {Min: -1}} {
		_, err := New(Deps{Deps: kit.Deps{Client: fake.NewClientBuilder().Build()}, Instances: cloudfake.New()}, Config{Period: 1, Cap: bad})
		if err == nil {
			t.Errorf("cap %+v accepted", bad)
		}
	}
}
