package route

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// explained returns a Node's explanation and this controller's lines.
func explained(f *fixture, store *explain.Store, name string) (explain.Explanation, string) {
	ex := store.Explain(f.ctx, nodeRef(name))
	var lines []string
	for _, d := range ex.Details {
		if d.Controller == ControllerName {
			lines = append(lines, d.Lines...)
		}
	}
	return ex, strings.Join(lines, "\n")
}

// TestExplainsEachNodesRoutes: a full route table refuses one Node's
// route: its record has the failed attempt, the cloud's error and the
// per-route backoff's retry; a routed Node has a success; a Node without
// pod CIDRs says why it has no route. Passes during the backoff attempt
// nothing, so they count no attempt; a deleted Node's record is dropped.
func TestExplainsEachNodesRoutes(t *testing.T) {
	cloud := cloudfake.New()
	cloud.RouteQuota = 1
	f := newFixture(t, cloud, Config{}, node("a", "lc://a", "10.244.0.0/24"), node("b", "lc://b", "10.244.1.0/24"), node("bare", "lc://bare"))
	store := explain.NewStore()
	c, err := New(Deps{Deps: kit.Deps{Client: f.cl, Clock: f.clk, Explain: store}, Routes: cloud},
		Config{ClusterName: "test", ClusterCIDRs: f.c.cfg.ClusterCIDRs, ReconcilePeriod: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.mustSync()
	routed, refused := "a", "b"
	if strings.Contains(snapshot(f.cloud), "→b") {
		routed, refused = "b", "a"
	}
	ex, lines := explained(f, store, routed)
	if len(ex.Syncs) != 1 || ex.Syncs[0].Result != explain.ResultSuccess || !strings.Contains(lines, "1 of 1 in the route table of cluster test") {
		t.Errorf("routed node %s: %+v %q", routed, ex.Syncs, lines)
	}
	for range 3 {
		f.mustSync()
	}
	ex, lines = explained(f, store, refused)
	if len(ex.Syncs) != 1 {
		t.Fatalf("refused node %s: syncs %+v", refused, ex.Syncs)
	}
	s := ex.Syncs[0]
	if s.Result != explain.ResultError || s.Attempts != 1 || !strings.Contains(s.LastError, "route table full") ||
		s.NextRetry == nil || !strings.Contains(s.RetryWhy, "per-route backoff after a failed creation (10s to 5m0s)") {
		t.Errorf("refused node %s: %+v; want one attempt (none during the backoff), the quota error and the backoff's retry", refused, s)
	}
	if d := s.NextRetry.Sub(s.Time); d <= 0 || d > 10*time.Second {
		t.Errorf("refused node %s: retried %s after its sync, want within the first backoff (10s)", refused, d)
	}
	for _, want := range []string{"0 of 1 in the route table", "creation failed in the last attempt: 10.244.", "route table full", "1 failed creations, next try at"} {
		if !strings.Contains(lines, want) {
			t.Errorf("refused node %s: lines %q lack %q", refused, lines, want)
		}
	}
	if _, lines := explained(f, store, "bare"); !strings.Contains(lines, "no spec.podCIDRs") {
		t.Errorf("node without pod CIDRs: %q", lines)
	}

	if err := f.cl.Delete(f.ctx, node(refused, "")); err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[pass]())
	defer q.ShutDown()
	f.c.nodeHandler().Delete(f.ctx, event.TypedDeleteEvent[*corev1.Node]{Object: node(refused, "")}, q)
	if ex, lines := explained(f, store, refused); ex.Known || lines != "" {
		t.Errorf("deleted node %s still explained: %+v %q", refused, ex, lines)
	}
}
