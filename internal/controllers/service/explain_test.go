package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/explain"
)

// The explain record of a Service: each sync's outcome, the nodes its load
// balancer targets; of a Node: the load balancers that include it and the
// predicate that excludes it. A deleted Service's entry is dropped.
func TestExplainRecord(t *testing.T) {
	t.Parallel()
	excluded := node("n2", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" })
	tainted := node("n3", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
	})
	deleted := node("n4", func(n *corev1.Node) {
		n.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		n.Finalizers = []string{"x"}
	})
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"), excluded, tainted, deleted)
	store := explain.NewStore()
	h.c.explain = store
	store.Describe(explain.KindService, ControllerName, h.c.describeService)
	store.Describe(explain.KindNode, ControllerName, h.c.describeNode)
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	ref := serviceRef(k.Service)

	h.lb.FailNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("provisioning", 2*time.Second))
	_, _ = h.c.Reconcile(ctx, k)
	if s := store.Explain(ctx, ref).Syncs[0]; s.Result != explain.ResultRetry || s.Attempts != 0 || !strings.Contains(s.RetryWhy, "RetryError") {
		t.Errorf("after a RetryError: %+v", s)
	}
	h.lb.FailNext("EnsureLoadBalancer", errors.New("boom"))
	_, _ = h.c.Reconcile(ctx, k)
	if s := store.Explain(ctx, ref).Syncs[0]; s.Result != explain.ResultError || s.Attempts != 1 || s.LastError == "" || !strings.Contains(s.RetryWhy, "backoff") {
		t.Errorf("after an error: %+v", s)
	}
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	ex := store.Explain(ctx, ref)
	if len(ex.Details) != 1 || !strings.Contains(strings.Join(ex.Details[0].Lines, "\n"), "targets 1 nodes: n1") {
		t.Errorf("service details %+v: want the one eligible node", ex.Details)
	}
	for name, want := range map[string]string{
		"n1": "included in 1 load balancers: ns/web", "n2": corev1.LabelNodeExcludeBalancers + `="true"`,
		"n3": ToBeDeletedTaint, "n4": "being deleted", "n9": "not in the service controller's node cache",
	} {
		lines := strings.Join(store.Explain(ctx, explain.Ref{Kind: explain.KindNode, Name: name}).Details[0].Lines, "\n")
		if !strings.Contains(lines, want) {
			t.Errorf("node %s: %q lacks %q", name, lines, want)
		}
	}

	svc := h.service("ns", "web")
	if err := h.cl.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	_, _ = h.c.Reconcile(ctx, k)
	if got := store.Explain(ctx, ref); len(got.Syncs) != 0 {
		t.Errorf("a deleted Service is still explained: %+v", got)
	}
}
