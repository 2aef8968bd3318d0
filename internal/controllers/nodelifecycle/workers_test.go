package nodelifecycle

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	cloudprovider "k8s.io/cloud-provider"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// gatedInstances holds every InstanceExists call until want calls are in
// flight at once (or a guard elapses, so a serial controller fails the
// test instead of hanging it), and records the most seen at once.
type gatedInstances struct {
	cloudprovider.InstancesV2
	want int

	mu       sync.Mutex
	inFlight int
	most     int
	arrived  chan struct{}
	opened   bool
}

func (g *gatedInstances) InstanceExists(ctx context.Context, n *corev1.Node) (bool, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == g.want && !g.opened {
		g.opened = true
		close(g.arrived)
	}
	g.mu.Unlock()
	select {
	case <-g.arrived:
	case <-time.After(10 * time.Second):
	}
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return g.InstancesV2.InstanceExists(ctx, n)
}

func workersHarness(t *testing.T, in cloudprovider.InstancesV2, lister *cloudfake.Cloud, workers int, capc DeletionCap, nodes ...*corev1.Node) (*harness, *prometheus.Registry) {
	t.Helper()
	objs := make([]client.Object, 0, len(nodes))
	for _, n := range nodes {
		objs = append(objs, n)
	}
	cl := fake.NewClientBuilder().WithObjects(objs...).WithIndex(&corev1.Node{}, attentionField, needsAttention).Build()
	rec := events.NewFakeRecorder(1000)
	reg := prometheus.NewRegistry()
	deps := Deps{Deps: kit.Deps{Client: cl, Recorder: rec, Registerer: reg}, Instances: in}
	if lister != nil {
		deps.Lister = lister
	}
	c, err := New(deps, Config{Period: 1, Workers: workers, Cap: capc})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{c: c, client: cl, rec: rec}, reg
}

// TestWorkersCheckNotReadyNodesInParallel: with three workers, the three
// NotReady Nodes' per-node checks are in flight at once, as upstream's
// --concurrent-node-lifecycle-syncs runs them.
func TestWorkersCheckNotReadyNodesInParallel(t *testing.T) {
	fc := cloudfake.New(inst("a", false), inst("b", false), inst("c", false))
	g := &gatedInstances{InstancesV2: fc, want: 3, arrived: make(chan struct{})}
	h, _ := workersHarness(t, g, nil, 3, DeletionCap{},
		node("a", corev1.ConditionFalse), node("b", corev1.ConditionFalse), node("c", corev1.ConditionFalse))
	sum, err := h.c.sync(context.Background(), pass{})
	if err != nil || sum.NotReady != 3 || sum.Deleted != 0 {
		t.Fatalf("sync: %+v %v; want 3 NotReady, none deleted", sum, err)
	}
	if g.most != 3 {
		t.Errorf("at most %d checks in flight at once, want 3", g.most)
	}
}

// TestOneWorkerChecksOneNodeAtATime: upstream's default of 1 keeps the
// checks serial.
func TestOneWorkerChecksOneNodeAtATime(t *testing.T) {
	fc := cloudfake.New(inst("a", false), inst("b", false))
	g := &gatedInstances{InstancesV2: fc, want: 1, arrived: make(chan struct{})}
	h, _ := workersHarness(t, g, nil, 0, DeletionCap{}, node("a", corev1.ConditionFalse), node("b", corev1.ConditionFalse))
	if _, err := h.c.sync(context.Background(), pass{}); err != nil {
		t.Fatal(err)
	}
	if g.most != 1 {
		t.Errorf("%d checks in flight at once with the default worker count, want 1", g.most)
	}
}

// TestWorkersKeepTheDeletionCapAndSecondOpinion: 40 Nodes, 10 NotReady
// with their instances gone, checked by 8 workers: the cap deletes exactly
// 4 and holds 6, and with a list every deleted Node had its per-node
// second opinion, whatever the interleaving.
func TestWorkersKeepTheDeletionCapAndSecondOpinion(t *testing.T) {
	modes(t, func(t *testing.T, list bool) {
		var nodes []*corev1.Node
		fc := cloudfake.New()
		for i := range 40 {
			name := fmt.Sprintf("n%02d", i)
			ready := corev1.ConditionTrue
			if i < 10 {
				ready = corev1.ConditionFalse
			} else {
				fc.PutInstance(inst(name, false))
			}
			nodes = append(nodes, zoned(name, fmt.Sprintf("z%d", i%4), ready))
		}
		var lister *cloudfake.Cloud
		if list {
			lister = fc
		}
		h, _ := workersHarness(t, fc, lister, 8, DeletionCap{MaxShare: 0.1, MaxZoneShare: 1, Min: 1, Window: time.Hour}, nodes...)
		sum, err := h.c.sync(context.Background(), pass{})
		if err != nil || sum.Deleted != 4 || sum.Held != 6 {
			t.Fatalf("sync: %+v %v; want 4 deleted, 6 held", sum, err)
		}
		if got := h.count(t); got != 36 {
			t.Errorf("%d Nodes left, want 36", got)
		}
		if list && sum.Confirmations != 10 {
			t.Errorf("%d second opinions, want one per missing Node (10)", sum.Confirmations)
		}
		// A second period with the window still open deletes nothing more.
		sum, err = h.c.sync(context.Background(), pass{})
		if err != nil || sum.Deleted != 0 || sum.Held != 6 {
			t.Errorf("second period: %+v %v; want 0 deleted, 6 held", sum, err)
		}
	})
}

// TestUpstreamMetricNames: the period and the per-node calls are counted
// under upstream's v1.37 names and label values beside Stratus' own.
func TestUpstreamMetricNames(t *testing.T) {
	fc := cloudfake.New(inst("alive", false), inst("stopped", true))
	h, reg := workersHarness(t, fc, nil, 2, DeletionCap{},
		node("alive", corev1.ConditionFalse), node("stopped", corev1.ConditionFalse), node("gone", corev1.ConditionFalse))
	if _, err := h.c.sync(context.Background(), pass{}); err != nil {
		t.Fatal(err)
	}
	calls := h.c.metrics.calls
	for _, c := range []struct {
		op, result string
		want       float64
	}{
		{opInstanceExists, kit.ResultSuccess, 2},
		{opInstanceExists, callNotFound, 1},
		{opInstanceShutdown, kit.ResultSuccess, 2},
	} {
		if got := testutil.ToFloat64(calls.WithLabelValues(c.op, c.result)); got != c.want {
			t.Errorf("%s{operation=%q,result=%q} = %v, want %v", MetricCloudProviderCalls, c.op, c.result, got, c.want)
		}
	}
	n, err := testutil.GatherAndCount(reg, MetricMonitorNodesDuration)
	if err != nil || n != 1 {
		t.Errorf("%s: %d series (%v), want 1", MetricMonitorNodesDuration, n, err)
	}
	if _, ok := h.get(t, "gone"); ok {
		t.Error("the Node whose instance is gone was not deleted")
	}
}

func TestNegativeWorkersRefused(t *testing.T) {
	cl := fake.NewClientBuilder().Build()
	if _, err := New(Deps{Deps: kit.Deps{Client: cl}, Instances: cloudfake.New()}, Config{Period: 1, Workers: -1}); err == nil {
		t.Error("New accepted -1 workers")
	}
}
