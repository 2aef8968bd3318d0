package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func inst(name string, shutdown bool) cloud.Instance {
	return cloud.Instance{ProviderID: "fake://" + name, Name: name, Shutdown: shutdown}
}

func node(name string, ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.NodeSpec{ProviderID: "fake://" + name, Taints: taints},
	}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
	}
	return n
}

type harness struct {
	c      *Controller
	client client.Client
	rec    *events.FakeRecorder
}

func newHarness(t *testing.T, fc *cloudfake.Cloud, list bool, nodes ...*corev1.Node) *harness {
	t.Helper()
	objs := make([]client.Object, 0, len(nodes))
	for _, n := range nodes {
		objs = append(objs, n)
	}
	cl := fake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&corev1.Node{}).WithIndex(&corev1.Node{}, attentionField, needsAttention).Build()
	rec := events.NewFakeRecorder(1000)
	deps := Deps{Deps: kit.Deps{Client: cl, Recorder: rec}, Instances: fc}
	if list {
		deps.Lister = fc
	}
	c, err := New(deps, Config{Period: 1})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{c: c, client: cl, rec: rec}
}

func (h *harness) get(t *testing.T, name string) (*corev1.Node, bool) {
	t.Helper()
	n := &corev1.Node{}
	err := h.client.Get(context.Background(), client.ObjectKey{Name: name}, n)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return n, err == nil
}

func (h *harness) events() string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

func modes(t *testing.T, f func(t *testing.T, list bool)) {
	for _, list := range []bool{false, true} {
		t.Run(fmt.Sprintf("list=%v", list), func(t *testing.T) { f(t, list) })
	}
}

func TestDeletesNotReadyNodeWhoseInstanceIsGone(t *testing.T) {
	modes(t, func(t *testing.T, list bool) {
		h := newHarness(t, cloudfake.New(inst("alive", false)), list,
			node("gone", corev1.ConditionFalse), node("unknown", ""), node("alive", corev1.ConditionUnknown))
		sum, err := h.c.sync(context.Background(), pass{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Deleted != 2 {
			t.Errorf("deleted %d, want 2", sum.Deleted)
		}
		for name, want := range map[string]bool{"gone": false, "unknown": false, "alive": true} {
			if _, ok := h.get(t, name); ok != want {
				t.Errorf("node %s exists = %v, want %v", name, ok, want)
			}
		}
		if ev := h.events(); !strings.Contains(ev, "Normal "+ReasonDeletingNode) {
			t.Errorf("events %q lack DeletingNode", ev)
		}
	})
}

func TestNeverDeletesReadyNode(t *testing.T) {
	modes(t, func(t *testing.T, list bool) {
		fc := cloudfake.New()
		h := newHarness(t, fc, list, node("ready-but-gone", corev1.ConditionTrue))
		if _, err := h.c.sync(context.Background(), pass{}); err != nil {
			t.Fatal(err)
		}
		if _, ok := h.get(t, "ready-but-gone"); !ok {
			t.Error("a Ready node was deleted")
		}
		if len(fc.Calls()) != 0 {
			t.Errorf("cloud calls = %d, want 0 with no NotReady node", len(fc.Calls()))
		}
	})
}

func TestCloudErrorsNeverDelete(t *testing.T) {
	for name, err := range map[string]error{
		"error":      errors.New("503 service unavailable"),
		"rate limit": cloudproviderapi.NewRetryError("429", 0),
		"timeout":    context.DeadlineExceeded,
	} {
		t.Run(name, func(t *testing.T) {
			modes(t, func(t *testing.T, list bool) {
				fc := cloudfake.New()
				fc.SetError("", err)
				h := newHarness(t, fc, list, node("n1", corev1.ConditionFalse))
				sum, _ := h.c.sync(context.Background(), pass{})
				if _, ok := h.get(t, "n1"); !ok || sum.Deleted != 0 || sum.Undecided != 1 {
					t.Errorf("node exists %v, summary %+v; want kept and undecided", ok, sum)
				}
				if ev := h.events(); !strings.Contains(ev, "Warning "+ReasonCloudCheckFailed) {
					t.Errorf("events %q lack the warning", ev)
				}
			})
		})
	}
}

func TestShutdownTaintAddedAndRemoved(t *testing.T) {
	modes(t, func(t *testing.T, list bool) {
		fc := cloudfake.New(inst("n1", true))
		h := newHarness(t, fc, list, node("n1", corev1.ConditionFalse))
		if sum, err := h.c.sync(context.Background(), pass{}); err != nil || sum.Tainted != 1 {
			t.Fatalf("sync: %+v %v", sum, err)
		}
		n, _ := h.get(t, "n1")
		if !HasShutdownTaint(n) {
			t.Fatalf("taints = %v, want the shutdown taint", n.Spec.Taints)
		}
		// A second period does not write again.
		if sum, _ := h.c.sync(context.Background(), pass{}); sum.Tainted != 0 {
			t.Errorf("tainted again: %+v", sum)
		}
		// The machine starts and the kubelet reports Ready.
		n.Status.Conditions[0].Status = corev1.ConditionTrue
		if err := h.client.Status().Update(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		if sum, err := h.c.sync(context.Background(), pass{}); err != nil || sum.Untainted != 1 {
			t.Fatalf("sync: %+v %v", sum, err)
		}
		if n, _ := h.get(t, "n1"); HasShutdownTaint(n) {
			t.Errorf("shutdown taint kept on a Ready node")
		}
	})
}

func TestOneListPerPeriod(t *testing.T) {
	fc := cloudfake.New()
	var nodes []*corev1.Node
	for i := range 50 {
		name := fmt.Sprintf("n%d", i)
		fc.PutInstance(inst(name, false))
		nodes = append(nodes, node(name, corev1.ConditionFalse))
	}
	h := newHarness(t, fc, true, nodes...)
	sum, err := h.c.sync(context.Background(), pass{})
	if err != nil || sum.NotReady != 50 || sum.Deleted != 0 {
		t.Fatalf("sync: %+v %v", sum, err)
	}
	if len(fc.Calls()) != 1 {
		t.Errorf("cloud calls = %d, want 1 for 50 NotReady nodes", len(fc.Calls()))
	}
}

func TestMatchesNodeWithoutProviderIDByName(t *testing.T) {
	n := node("n1", corev1.ConditionFalse)
	n.Spec.ProviderID = ""
	h := newHarness(t, cloudfake.New(inst("n1", false)), true, n)
	if sum, err := h.c.sync(context.Background(), pass{}); err != nil || sum.Deleted != 0 {
		t.Fatalf("sync: %+v %v", sum, err)
	}
}

// TestLeavesNodeTheProviderCannotTellAboutQuietly: a legacy provider
// without instance IDs answers NotImplemented for a Node without
// providerID (through the v1 adapter). The Node is neither deleted nor
// tainted, as upstream leaves it, and without the warning event and
// cloud-error count a failing cloud gets every period.
func TestLeavesNodeTheProviderCannotTellAboutQuietly(t *testing.T) {
	legacy := cloud.InstancesV2FromV1("legacy", noIDInstances{}, nil)
	n := node("no-id", corev1.ConditionFalse)
	n.Spec.ProviderID = ""
	cl := fake.NewClientBuilder().WithObjects(n).WithIndex(&corev1.Node{}, attentionField, needsAttention).Build()
	rec := events.NewFakeRecorder(10)
	c, err := New(Deps{Deps: kit.Deps{Client: cl, Recorder: rec}, Instances: legacy}, Config{Period: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{c: c, client: cl, rec: rec}
	for range 3 {
		sum, err := c.sync(context.Background(), pass{})
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
		if sum.Unknowable != 1 || sum.Undecided != 0 || sum.Deleted != 0 || sum.Tainted != 0 {
			t.Fatalf("summary = %+v, want the node counted as unknowable only", sum)
		}
	}
	if got, ok := h.get(t, "no-id"); !ok || HasShutdownTaint(got) {
		t.Errorf("node exists=%v, tainted=%v; want it left alone", ok, ok && HasShutdownTaint(got))
	}
	if ev := h.events(); ev != "" {
		t.Errorf("events %q, want none", ev)
	}
	if got := testutil.ToFloat64(c.metrics.cloudErrors); got != 0 {
		t.Errorf("cloud errors counted: %v, want 0", got)
	}
}

// noIDInstances is a legacy Instances whose InstanceID is NotImplemented.
type noIDInstances struct{ cloudprovider.Instances }

func (noIDInstances) InstanceID(context.Context, types.NodeName) (string, error) {
	return "", cloudprovider.NotImplemented
}

func TestReconcileSchedulesNextPeriodEvenAfterFailure(t *testing.T) {
	fc := cloudfake.New()
	fc.SetError("", errors.New("cloud unavailable"))
	h := newHarness(t, fc, true, node("a", corev1.ConditionFalse))
	h.c.cfg.Period = 7
	res, err := h.c.Reconcile(context.Background(), pass{})
	if err != nil || res.RequeueAfter != 7 {
		t.Fatalf("Reconcile = %+v, %v; want RequeueAfter 7ns and no error (the next period retries)", res, err)
	}
	if _, ok := h.get(t, "a"); !ok {
		t.Fatal("node a deleted on a cloud error")
	}
}

// A period looks only at the Nodes the index marks: NotReady ones (Ready
// False or Unknown, or no Ready condition yet) and Ready ones that still
// carry the shutdown taint. A Ready, untainted Node is not indexed.
func TestIndexMarksOnlyNodesThatNeedAttention(t *testing.T) {
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"ready", node("a", corev1.ConditionTrue), false},
		{"ready with another taint", node("a", corev1.ConditionTrue, corev1.Taint{Key: "other", Effect: corev1.TaintEffectNoSchedule}), false},
		{"not ready", node("a", corev1.ConditionFalse), true},
		{"unknown", node("a", corev1.ConditionUnknown), true},
		{"no ready condition", node("a", ""), true},
		{"ready with the shutdown taint", node("a", corev1.ConditionTrue, ShutdownTaint()), true},
	} {
		got := needsAttention(tc.node)
		if tc.want != slices.Equal(got, []string{attentionValue}) || (!tc.want && len(got) != 0) {
			t.Errorf("%s: index values %q, want attention %v", tc.name, got, tc.want)
		}
	}
}
