package nodeipam

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/explain"
)

// TestExplainSaysWhatANodeHoldsOrWaitsFor: explain tells a Node's pod
// CIDRs, a Node waiting for a free one and the failed attempt it retries,
// and forgets a deleted Node.
func TestExplainSaysWhatANodeHoldsOrWaitsFor(t *testing.T) {
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/24"), MaskSizes: []int{24}}
	f := newFixture(t, cfg, nil, node("a"), node("b"))
	store := explain.NewStore()
	f.c.explain = store
	store.Describe(explain.KindNode, ControllerName, f.c.describe)
	reconcileNode := func(name string) {
		t.Helper()
		_, _ = f.c.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	details := func(name string) (string, explain.Explanation) {
		t.Helper()
		e := store.Explain(f.ctx, nodeRef(name))
		var lines []string
		for _, d := range e.Details {
			if d.Controller == ControllerName {
				lines = append(lines, d.Lines...)
			}
		}
		return strings.Join(lines, "\n"), e
	}

	reconcileNode("a")
	if got, _ := details("a"); !strings.HasPrefix(got, "allocated pod CIDRs 10.0.0.0/24; the write to the Node has not been seen yet") {
		t.Errorf("a, just allocated: %q, want its pod CIDR awaiting the write", got)
	}
	reconcileNode("a") // the Node's update, as its watch event queues it
	if got, _ := details("a"); got != "holds pod CIDRs 10.0.0.0/24" {
		t.Errorf("a: %q, want its pod CIDR", got)
	}
	reconcileNode("b")
	got, e := details("b")
	if !strings.Contains(got, "waiting for a free pod CIDR: 10.0.0.0/24 has none left") {
		t.Errorf("b: %q, want it waiting for a free pod CIDR of 10.0.0.0/24", got)
	}
	if len(e.Syncs) != 1 || e.Syncs[0].Controller != ControllerName || e.Syncs[0].Attempts == 0 {
		t.Errorf("b's syncs: %+v, want one failed attempt of %s", e.Syncs, ControllerName)
	}

	if err := f.cl.Delete(f.ctx, node("a")); err != nil {
		t.Fatal(err)
	}
	reconcileNode("a")
	if _, e := details("a"); e.Known {
		t.Errorf("a after its deletion: %+v, want nothing known", e)
	}
	reconcileNode("b")
	reconcileNode("b")
	if got, _ := details("b"); got != "holds pod CIDRs 10.0.0.0/24" {
		t.Errorf("b after a's deletion: %q, want the freed pod CIDR", got)
	}
}
