package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// explainHarness is a controller with an explain record.
func explainHarness(t *testing.T, fc *cloudfake.Cloud, capc DeletionCap, nodes ...*corev1.Node) (*harness, *explain.Store) {
	t.Helper()
	objs := make([]client.Object, 0, len(nodes))
	for _, n := range nodes {
		objs = append(objs, n)
	}
	cl := fake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&corev1.Node{}).WithIndex(&corev1.Node{}, attentionField, needsAttention).Build()
	store := explain.NewStore()
	c, err := New(Deps{Deps: kit.Deps{Client: cl, Explain: store}, Instances: fc, Lister: fc}, Config{Period: 7, Cap: capc})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{c: c, client: cl}, store
}

// said returns the explanation of a Node and this controller's lines.
func said(store *explain.Store, name string) (explain.Explanation, string) {
	ex := store.Explain(context.Background(), nodeRef(name))
	var lines []string
	for _, d := range ex.Details {
		if d.Controller == ControllerName {
			lines = append(lines, d.Lines...)
		}
	}
	return ex, strings.Join(lines, "\n")
}

// TestExplainsEachVerdict: every NotReady Node gets the period's verdict
// in its explain record: a shutdown taint, a deletion the cap holds, a
// Node the second opinion kept; the deleted Node's record is dropped.
func TestExplainsEachVerdict(t *testing.T) {
	fc := cloudfake.New(inst("stopped", true), inst("disputed", false), inst("running", false))
	fc.HideFromList("fake://disputed")
	h, store := explainHarness(t, fc, DeletionCap{MaxShare: 0.01, MaxZoneShare: 1, Min: 1},
		node("stopped", corev1.ConditionFalse), node("disputed", corev1.ConditionFalse), node("running", corev1.ConditionUnknown),
		node("gone-a", corev1.ConditionFalse), node("gone-b", corev1.ConditionFalse))
	sum, err := h.c.sync(context.Background(), pass{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Deleted != 1 || sum.Held != 1 || sum.Tainted != 1 || sum.Disagreements != 1 {
		t.Fatalf("summary %+v; want one deleted, one held, one tainted, one kept", sum)
	}
	for name, want := range map[string]string{
		"stopped":  "its instance is shut down: tainted " + shutdownTaintText(),
		"disputed": `kept: the per-node check did not confirm the list (second opinion): the cloud's instance list lacks spec.providerID "fake://disputed", but InstanceExists says the instance exists`,
		"gone-b":   "deletion held by the deletion cap: 1 of the cluster's 5 Nodes deleted in the last 10m0s, the cap is 1",
		"running":  "its instance exists and runs",
	} {
		ex, lines := said(store, name)
		if !strings.Contains(lines, want) {
			t.Errorf("node %s: explained %q, want %q", name, lines, want)
		}
		if len(ex.Syncs) != 1 || ex.Syncs[0].Controller != ControllerName || ex.Syncs[0].Result != explain.ResultSuccess {
			t.Errorf("node %s: syncs %+v, want this controller's success", name, ex.Syncs)
		}
		deferred := name == "disputed" || name == "gone-b"
		if got := ex.Syncs[0].NextRetry != nil; got != deferred || (deferred && !strings.Contains(ex.Syncs[0].RetryWhy, "--node-monitor-period 7ns")) {
			t.Errorf("node %s: next retry %v (%q); want one at the next period: %t", name, ex.Syncs[0].NextRetry, ex.Syncs[0].RetryWhy, deferred)
		}
	}
	if ex, _ := said(store, "gone-a"); ex.Known {
		t.Errorf("the deleted Node is still explained: %+v", ex)
	}
	if store.Len() != 4 {
		t.Errorf("the record holds %d Nodes, want the 4 left", store.Len())
	}
}

// TestExplainsCloudFailuresAndForgets: a failing list counts attempts on
// every NotReady Node; a Node that turns Ready loses its verdict, and one
// deleted by someone else loses its record.
func TestExplainsCloudFailuresAndForgets(t *testing.T) {
	fc := cloudfake.New(inst("a", false), inst("b", false))
	h, store := explainHarness(t, fc, DeletionCap{}, node("a", corev1.ConditionFalse), node("b", corev1.ConditionFalse))
	fc.SetError("ListInstances", errors.New("cloud is down"))
	for range 2 {
		if _, err := h.c.sync(context.Background(), pass{}); err == nil {
			t.Fatal("a period whose list failed reported no error")
		}
	}
	ex, lines := said(store, "a")
	if len(ex.Syncs) != 1 || ex.Syncs[0].Result != explain.ResultError || ex.Syncs[0].Attempts != 2 ||
		!strings.Contains(ex.Syncs[0].LastError, "cloud is down") || ex.Syncs[0].NextRetry == nil ||
		!strings.Contains(lines, "the cloud's instance list failed") {
		t.Fatalf("after two failed periods: %+v %q; want two attempts, the error and the next period", ex.Syncs, lines)
	}
	fc.SetError("ListInstances", nil)
	ready := node("a", corev1.ConditionTrue)
	cur, _ := h.get(t, "a")
	ready.ResourceVersion = cur.ResourceVersion
	if err := h.client.Status().Update(context.Background(), ready); err != nil {
		t.Fatal(err)
	}
	b, _ := h.get(t, "b")
	if err := h.client.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.sync(context.Background(), pass{}); err != nil {
		t.Fatal(err)
	}
	ex, lines = said(store, "a")
	if lines != "" || len(ex.Syncs) != 1 || ex.Syncs[0].Result != explain.ResultSuccess || ex.Syncs[0].Attempts != 0 {
		t.Errorf("a Node Ready again: %+v %q; want a success and no verdict", ex.Syncs, lines)
	}
	if ex, _ := said(store, "b"); ex.Known {
		t.Errorf("a deleted Node is still explained: %+v", ex)
	}
}

// TestExplainsRefusalApartFromOutage: a Node whose check the provider
// refuses on the Node's own account (a providerID it cannot parse) is not
// explained as a cloud that did not answer; one whose check timed out is.
func TestExplainsRefusalApartFromOutage(t *testing.T) {
	fc := cloudfake.New(inst("refused", false), inst("timedout", false))
	fc.SetErrorFor("", "fake://refused", errors.New(`providerID "fake://refused" cannot be parsed`))
	fc.SetErrorFor("", "fake://timedout", fmt.Errorf("describe instance: %w", context.DeadlineExceeded))
	cl := fake.NewClientBuilder().WithObjects(node("refused", corev1.ConditionFalse), node("timedout", corev1.ConditionFalse)).
		WithStatusSubresource(&corev1.Node{}).WithIndex(&corev1.Node{}, attentionField, needsAttention).Build()
	store := explain.NewStore()
	c, err := New(Deps{Deps: kit.Deps{Client: cl, Explain: store}, Instances: fc}, Config{Period: 7})
	if err != nil {
		t.Fatal(err)
	}
	// The period's error (its Nodes undecided) is the explain record's
	// business here, not the test's.
	_, _ = c.sync(context.Background(), pass{})
	for name, want := range map[string]string{
		"refused":  "refused to check whether its instance exists (an error of this Node's, not an outage)",
		"timedout": "the cloud did not answer whether its instance exists",
	} {
		if _, lines := said(store, name); !strings.Contains(lines, want) {
			t.Errorf("node %s: explained %q, want %q", name, lines, want)
		}
	}
}
