package nodelifecycle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/ownership"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// TestForeignNodesLeftAlone: with an ownership policy for the fake
// platform, a NotReady Node of another platform (by providerID or by
// annotation) is neither asked about, deleted nor tainted; one that names
// no platform is not deleted on the cloud's not-found; the provider's own
// gone Node is deleted.
func TestForeignNodesLeftAlone(t *testing.T) {
	modes(t, func(t *testing.T, list bool) {
		pol, err := ownership.New([]string{"fake"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		onprem := node("onprem", corev1.ConditionFalse)
		onprem.Spec.ProviderID = "onprem://rack1/onprem"
		edge := node("edge", corev1.ConditionFalse)
		edge.Spec.ProviderID = ""
		edge.Annotations = map[string]string{ownership.AnnotationPlatform: "edge"}
		noPlatform := node("no-platform", corev1.ConditionFalse)
		noPlatform.Spec.ProviderID = ""
		fc := cloudfake.New()
		cl := fake.NewClientBuilder().WithObjects(onprem, edge, noPlatform, node("gone", corev1.ConditionFalse)).
			WithIndex(&corev1.Node{}, attentionField, needsAttention).Build()
		deps := Deps{Deps: kit.Deps{Client: cl, Recorder: events.NewFakeRecorder(100), Ownership: pol}, Instances: fc}
		if list {
			deps.Lister = fc
		}
		c, err := New(deps, Config{Period: 1})
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{c: c, client: cl}
		sum, err := c.sync(context.Background(), pass{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Foreign != 2 || sum.NoPlatform != 1 || sum.Deleted != 1 || sum.NotReady != 2 {
			t.Errorf("summary %+v; want 2 foreign, 1 without platform kept, 1 deleted of 2 NotReady owned", sum)
		}
		for name, want := range map[string]bool{"onprem": true, "edge": true, "no-platform": true, "gone": false} {
			if _, ok := h.get(t, name); ok != want {
				t.Errorf("node %s exists = %v, want %v", name, ok, want)
			}
		}
		// Per node: gone (and no-platform) asked, never the foreign ones.
		wantCalls := 2
		if list {
			wantCalls = 3 // one list, then the second opinions of the two it lacks
		}
		if got := len(fc.Calls()); got != wantCalls {
			t.Errorf("cloud calls = %d, want %d: the foreign nodes must not be asked about", got, wantCalls)
		}
	})
}

// TestCensusLeavesForeignNodesOut: foreign Nodes do not widen the cap.
func TestCensusLeavesForeignNodesOut(t *testing.T) {
	pol, err := ownership.New([]string{"fake"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	objs := []*corev1.Node{node("a", corev1.ConditionTrue)}
	for _, name := range []string{"x", "y", "z"} {
		n := node(name, corev1.ConditionTrue)
		n.Spec.ProviderID = "onprem://" + name
		objs = append(objs, n)
	}
	h := newHarness(t, cloudfake.New(), true, objs...)
	h.c.ownership = pol
	cs, err := h.c.takeCensus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cs.total != 1 {
		t.Errorf("census counts %d nodes, want 1 (the foreign ones left out)", cs.total)
	}
}
