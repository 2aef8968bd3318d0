package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

const (
	// refusedWindow is how long the refused objects' calls are counted.
	refusedWindow = 60 * time.Second
	// refusedNodes and refusedServices are how many of each fail on
	// their own account.
	refusedNodes    = 3
	refusedServices = 10
	// serviceAttempts is how many syncs the per-Service backoff (5 s,
	// doubling) gives a refused Service within refusedWindow: at 0, 5, 15
	// and 35 s, plus one for a resync the window may catch.
	serviceAttempts = 5
)

// refusedObjects: objects that fail on their own account, over and over,
// with the cloud healthy. Three NotReady Nodes carry a providerID the
// provider cannot parse (what a Node of another platform looks like
// without --cloud-provider-platforms), and ten Services are refused by the
// cloud because its load-balancer quota is full. Their failures are not an
// outage: no "recovery" may re-queue them, so the monitor keeps its period
// and each Service's attempts follow its own backoff, and the cloud sees
// its baseline request rate plus what those backoffs allow.
func refusedObjects(t *testing.T, w *world, leader *replica) *replica {
	ctx := w.ctx
	ns := w.namespace("refused")
	baseline := w.requestRate(t, 15*time.Second)

	var nodes []string
	for i := range refusedNodes {
		name := fmt.Sprintf("refused-node-%d", i)
		n := localcluster.NewNode(name, localcluster.NodeOptions{ProviderID: fmt.Sprintf("localcloud://i-garbage%d", i), Unmanaged: true})
		if _, err := w.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.setReady(name, corev1.ConditionFalse)
		nodes = append(nodes, name)
	}
	all, err := w.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	knobs, err := w.cloud.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.setKnobs(api.KnobsPatch{Quotas: &api.QuotasPatch{LoadBalancers: ptr.To(len(all))}})

	start, err := w.cloud.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := w.createServices(ns, "refused", refusedServices)
	time.Sleep(refusedWindow)
	end, err := w.cloud.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}

	delta := func(op string) int64 { return end.Operations[op].Total - start.Operations[op].Total }
	refusals := end.Operations["CreateLoadBalancer"].ByCode["403"] - start.Operations["CreateLoadBalancer"].ByCode["403"]
	rate := float64(end.Total-start.Total) / refusedWindow.Seconds()
	// The instance lists the Nodes may cause: the monitor's one per period
	// (1 s here) and each Node's initialization backoff (250 ms doubling:
	// at most 9 attempts in a minute), which shared lists serve.
	lists := int64(refusedWindow.Seconds()) + 9*refusedNodes
	// What the refused objects may add to the baseline: those lists, and
	// each Service's attempts, at most four requests each (the controller's
	// lookup, the provider's lookup and create, one to spare).
	allowed := baseline + float64(lists+4*serviceAttempts*refusedServices)/refusedWindow.Seconds()
	t.Logf("fault-refused scenario=refused-objects baseline-rps=%.2f rps=%.2f allowed-rps=%.2f instance-lists=%d quota-refusals=%d attempts-per-service=%.1f window=%s",
		baseline, rate, allowed, delta("ListInstances"), refusals, float64(refusals)/refusedServices, refusedWindow)
	if refusals == 0 {
		t.Fatal("the cloud refused no load balancer: the quota did not bite")
	}
	if refusals > serviceAttempts*refusedServices {
		t.Errorf("the cloud refused %d creations of %d Services in %s: %.1f attempts each, their backoff allows %d",
			refusals, refusedServices, refusedWindow, float64(refusals)/refusedServices, serviceAttempts)
	}
	if n := delta("ListInstances"); n > lists {
		t.Errorf("%d instance lists in %s with %d NotReady Nodes the provider cannot parse: over the %d the monitor period and their backoff allow",
			n, refusedWindow, refusedNodes, lists)
	}
	if rate > allowed {
		for op, st := range end.Operations {
			t.Logf("%s: %d requests in the window", op, st.Total-start.Operations[op].Total)
		}
		t.Errorf("%.2f cloud requests/s with the refused objects, over the %.2f the baseline (%.2f/s) and their backoffs allow",
			rate, allowed, baseline)
	}

	// Cleared: the Nodes go, the Services are deleted, the quota restored.
	for _, name := range nodes {
		if err := w.cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.deleteServices(ns, names...)
	w.setKnobs(api.KnobsPatch{Quotas: &api.QuotasPatch{LoadBalancers: ptr.To(knobs.Quotas.LoadBalancers)}})
	w.settle(t, "refused-objects", time.Now())
	return leader
}

// requestRate measures the cloud's requests per second over d.
func (w *world) requestRate(t *testing.T, d time.Duration) float64 {
	t.Helper()
	count := func(ctx context.Context) int64 {
		st, err := w.cloud.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Total
	}
	before := count(w.ctx)
	time.Sleep(d)
	return float64(count(w.ctx)-before) / d.Seconds()
}
