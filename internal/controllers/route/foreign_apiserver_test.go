package route

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestRemoveConditionOnAPIServer: the removal's JSON patch against a real
// API server removes the condition at its index and leaves the kubelet's
// others; with the Node's condition rewritten since it was read, the
// patch's tests fail, the API server's refusal counts as "no longer ours"
// (no error, nothing removed), as the fake client cannot show.
func TestRemoveConditionOnAPIServer(t *testing.T) {
	env := testbed.Start(t)
	ctx := testbed.Context(t, time.Minute)
	cl, err := client.New(env.Config, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, cloudfake.New(), Config{})
	c, err := New(Deps{Deps: kit.Deps{Client: cl, Recorder: events.NewFakeRecorder(10), Registerer: prometheus.NewRegistry(),
		Clock: f.clk, Ownership: mustPolicy(t, "lc")}, Routes: cloudfake.New()}, f.c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Unix(1_700_000_000, 0))
	create := func(name string) *corev1.Node {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "onprem://" + name}}
		if err := cl.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: ConditionNoRouteCreated,
				Message: msgCreateFailed + "10.244.1.0/24: instance not found", LastHeartbeatTime: now, LastTransitionTime: now},
		}
		if err := cl.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n.DeepCopy()
	}
	get := func(name string) *corev1.Node {
		t.Helper()
		n := &corev1.Node{}
		if err := cl.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	read := create("onprem")
	if err := c.removeCondition(ctx, read, ownCondition(read)); err != nil {
		t.Fatal(err)
	}
	if got := get("onprem").Status.Conditions; len(got) != 1 || got[0].Type != corev1.NodeReady {
		t.Errorf("conditions after the removal: %+v", got)
	}

	stale := create("rewritten")
	cur := get("rewritten")
	cur.Status.Conditions[1].Status, cur.Status.Conditions[1].Reason = corev1.ConditionFalse, "CalicoIsUp"
	cur.Status.Conditions[1].Message = "Calico is running on this node"
	if err := cl.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if err := c.removeCondition(ctx, stale, ownCondition(stale)); err != nil {
		t.Fatalf("removal from a stale copy: %v, want the refusal taken as nothing to do", err)
	}
	if got := condition(get("rewritten")); got == nil || got.Reason != "CalicoIsUp" {
		t.Errorf("another writer's condition became %+v", got)
	}
}
