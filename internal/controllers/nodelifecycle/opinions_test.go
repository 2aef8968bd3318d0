package nodelifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func (h *harness) opinions(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, a := range []string{opinionConfirmed, opinionDisagreed, opinionFailed} {
		out[a] = testutil.ToFloat64(h.c.metrics.secondOpinions.WithLabelValues(a))
	}
	return out
}

func (h *harness) wantOpinions(t *testing.T, when string, confirmed, disagreed, failed float64) {
	t.Helper()
	got := h.opinions(t)
	if got[opinionConfirmed] != confirmed || got[opinionDisagreed] != disagreed || got[opinionFailed] != failed {
		t.Errorf("%s: second opinions %v, want confirmed %v, disagreed %v, failed %v", when, got, confirmed, disagreed, failed)
	}
}

func (h *harness) mustPeriod(t *testing.T) Summary {
	t.Helper()
	sum, err := h.c.sync(context.Background(), pass{})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestHeldNodesConfirmedOnce: the deletion cap holds six of ten Nodes
// whose instances are gone, period after period. Each period asks them
// again (the Summary counts the checks), but the metric counts each
// Node's confirmation once: ten in all, not ten plus six per period.
func TestHeldNodesConfirmedOnce(t *testing.T) {
	nodes, alive := fortyNodesTenGone()
	h, clk := capHarness(t, DeletionCap{MaxShare: 0.1, MaxZoneShare: 1, Min: 1, Window: 10 * time.Minute}, alive, nodes...)
	if sum := h.mustPeriod(t); sum.Deleted != 4 || sum.Held != 6 || sum.Confirmations != 10 {
		t.Fatalf("first period: %+v; want 4 deleted, 6 held, 10 checks", sum)
	}
	h.wantOpinions(t, "first period", 10, 0, 0)
	for i := range 3 {
		clk.Step(time.Second)
		if sum := h.mustPeriod(t); sum.Held != 6 || sum.Confirmations != 6 {
			t.Fatalf("period %d: %+v; want 6 held, 6 checks", i+2, sum)
		}
		h.wantOpinions(t, fmt.Sprintf("period %d", i+2), 10, 0, 0)
	}
	clk.Step(11 * time.Minute)
	if sum := h.mustPeriod(t); sum.Deleted != 3 {
		t.Fatalf("after the window: %+v; want 3 deleted", sum)
	}
	h.wantOpinions(t, "after the window", 10, 0, 0)
}

// TestOpinionEpisodes: a Node the list keeps lacking while its instance
// exists is counted disagreed once while it stays NotReady; a new
// NotReady spell (its Ready condition changed) is a new episode and counts
// again; a different answer within the episode counts too. The episodes
// of Nodes no period asks about any more are forgotten.
func TestOpinionEpisodes(t *testing.T) {
	fc := cloudfake.New()
	fc.PutInstance(inst("hidden", false))
	fc.HideFromList("fake://hidden")
	hidden := node("hidden", corev1.ConditionFalse)
	hidden.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, fc, true, hidden)
	for range 3 {
		h.mustPeriod(t)
	}
	h.wantOpinions(t, "three periods", 0, 1, 0)

	// The per-node check now fails: another answer, counted once.
	fc.SetErrorFor("InstanceExists", "fake://hidden", fmt.Errorf("cloud unavailable"))
	h.mustPeriod(t)
	h.mustPeriod(t)
	h.wantOpinions(t, "check failing", 0, 1, 1)
	fc.SetErrorFor("InstanceExists", "fake://hidden", nil)
	h.mustPeriod(t)
	h.wantOpinions(t, "disagreeing again within the episode", 0, 1, 1)

	// Ready, then NotReady anew: a new episode.
	setReady(t, h, "hidden", corev1.ConditionTrue, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))
	h.mustPeriod(t)
	setReady(t, h, "hidden", corev1.ConditionFalse, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC))
	h.mustPeriod(t)
	h.mustPeriod(t)
	h.wantOpinions(t, "a new NotReady spell", 0, 2, 1)

	// Gone: confirmed, deleted, and after a period without it forgotten.
	fc.DeleteInstance("fake://hidden")
	other := node("other", corev1.ConditionFalse)
	if err := h.client.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	fc.PutInstance(inst("other", false))
	if sum := h.mustPeriod(t); sum.Deleted != 1 {
		t.Fatalf("%+v: want the gone Node deleted", sum)
	}
	h.wantOpinions(t, "gone", 1, 2, 1)
	h.mustPeriod(t)
	h.mustPeriod(t)
	if n := len(h.c.metrics.opinions.nodes); n != 0 {
		t.Errorf("%d episodes remembered after their Nodes were no longer asked about, want 0", n)
	}
}

func setReady(t *testing.T, h *harness, name string, status corev1.ConditionStatus, at time.Time) {
	t.Helper()
	n := &corev1.Node{}
	if err := h.client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(at)}}
	if err := h.client.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}
