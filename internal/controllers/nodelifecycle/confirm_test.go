package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// TestListAloneNeverDeletes: the list answer lacks instances that exist
// (half of the NotReady Nodes' instances, as a list cut short returns).
// The per-node check disagrees, so none of them is deleted; the Node whose
// instance is really gone is deleted, after its own check confirmed it.
func TestListAloneNeverDeletes(t *testing.T) {
	fc := cloudfake.New()
	var nodes []*corev1.Node
	for i := range 10 {
		name := fmt.Sprintf("n%d", i)
		fc.PutInstance(inst(name, false))
		if i%2 == 0 {
			fc.HideFromList("fake://" + name)
		}
		nodes = append(nodes, node(name, corev1.ConditionFalse))
	}
	nodes = append(nodes, node("gone", corev1.ConditionFalse))
	h := newHarness(t, fc, true, nodes...)
	sum, err := h.c.sync(context.Background(), pass{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Deleted != 1 || sum.Confirmations != 6 || sum.Disagreements != 5 {
		t.Errorf("summary %+v; want 1 deleted, 6 per-node checks, 5 disagreements", sum)
	}
	for i := range 10 {
		if _, ok := h.get(t, fmt.Sprintf("n%d", i)); !ok {
			t.Errorf("node n%d deleted on the list's answer alone", i)
		}
	}
	if _, ok := h.get(t, "gone"); ok {
		t.Error("node gone kept, although both answers say its instance is gone")
	}
	ev := h.events()
	if got := strings.Count(ev, "Warning "+ReasonDeletionUnconfirmed); got != 5 {
		t.Errorf("%d %s warnings, want 5: %q", got, ReasonDeletionUnconfirmed, ev)
	}
	for answer, want := range map[string]float64{opinionConfirmed: 1, opinionDisagreed: 5, opinionFailed: 0} {
		if got := testutil.ToFloat64(h.c.metrics.secondOpinions.WithLabelValues(answer)); got != want {
			t.Errorf("second opinions %s = %v, want %v", answer, got, want)
		}
	}
}

// TestUnparseableProviderIDKept is the sandbox's repro: NotReady Nodes
// another system registered, whose providerIDs the provider cannot parse.
// The list has no such instance; the per-node check fails, so each Node is
// kept with a warning naming the field and its value.
func TestUnparseableProviderIDKept(t *testing.T) {
	ids := []string{"nonsense://x", "aws:///eu-west-1a/i-0abc", "localcloud://garbage"}
	modes(t, func(t *testing.T, list bool) {
		fc := cloudfake.New()
		// The provider cannot parse them, as a real one's per-node
		// calls refuse a providerID of another scheme.
		for _, id := range ids {
			fc.SetErrorFor("", id, fmt.Errorf("providerID %q does not start with fake://", id))
		}
		var nodes []*corev1.Node
		for i, id := range ids {
			n := node(fmt.Sprintf("foreign-%d", i), corev1.ConditionFalse)
			n.Spec.ProviderID = id
			nodes = append(nodes, n)
		}
		h := newHarness(t, fc, list, nodes...)
		for range 3 {
			sum, err := h.c.sync(context.Background(), pass{})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Deleted != 0 {
				t.Fatalf("summary %+v: a node was deleted", sum)
			}
		}
		ev := h.events()
		for i, id := range ids {
			if _, ok := h.get(t, fmt.Sprintf("foreign-%d", i)); !ok {
				t.Errorf("node with providerID %q deleted", id)
			}
			if !strings.Contains(ev, id) {
				t.Errorf("no event names providerID %q: %q", id, ev)
			}
		}
		reason := ReasonCloudCheckFailed
		if list {
			reason = ReasonDeletionUnconfirmed
		}
		if !strings.Contains(ev, "Warning "+reason) {
			t.Errorf("events %q lack the %s warning", ev, reason)
		}
	})
}

// TestSecondOpinionErrorsKeep: a per-node check that fails keeps the Node
// and counts as failed, never as confirmed.
func TestSecondOpinionErrorsKeep(t *testing.T) {
	fc := cloudfake.New()
	fc.SetError("InstanceExists", errors.New("503 service unavailable"))
	fc.SetError("InstanceShutdown", errors.New("503 service unavailable"))
	h := newHarness(t, fc, true, node("n1", corev1.ConditionFalse))
	sum, err := h.c.sync(context.Background(), pass{})
	if err != nil || sum.Deleted != 0 || sum.Disagreements != 1 {
		t.Fatalf("sync: %+v %v; want the node kept", sum, err)
	}
	if got := testutil.ToFloat64(h.c.metrics.secondOpinions.WithLabelValues(opinionFailed)); got != 1 {
		t.Errorf("failed second opinions = %v, want 1", got)
	}
}
