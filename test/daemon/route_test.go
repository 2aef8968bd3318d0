package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/internal/controllers/route"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// routeClusterName is the daemon's default --cluster-name, hence its route table.
const routeClusterName = "kubernetes"

type routeBed struct {
	t     *testing.T
	ctx   context.Context
	env   *testbed.Env
	cs    kubernetes.Interface
	cloud *lcclient.Client // admin view of the cloud
	conf  string           // --cloud-config
	// metrics is the daemon's registry, fresh per bed: values are absolute.
	metrics *prometheus.Registry
}

func newRouteBed(t *testing.T) *routeBed {
	t.Helper()
	b := &routeBed{t: t, ctx: testbed.Context(t, 6*time.Minute), env: testbed.Start(t), metrics: prometheus.NewRegistry()}
	b.cs = b.env.Clientset
	b.env.StartKwok(t)
	srv, conf := startCloud(t, store.Pools{Internal: netip.MustParsePrefix("127.1.201.0/24"), VIP: netip.MustParsePrefix("127.0.201.0/24")})
	b.conf = conf
	var err error
	if b.cloud, err = lcclient.New(srv.URL(), srv.Token()); err != nil {
		t.Fatal(err)
	}
	return b
}

// startCCM runs the daemon with both network controllers until t ends.
func (b *routeBed) startCCM() {
	b.startCCMWith("--controllers=node-ipam-controller,node-route-controller",
		"--allocate-node-cidrs", "--configure-cloud-routes",
		"--cluster-cidr=10.244.0.0/16,fd00:10:244::/56")
}

// startCCMWith runs the daemon with args after the bed's own until t ends.
func (b *routeBed) startCCMWith(args ...string) {
	t := b.t
	o := app.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(append([]string{
		"--cloud-provider=" + lcprovider.ProviderName, "--cloud-config=" + b.conf,
		"--kubeconfig=" + b.env.Kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--route-reconciliation-period=1s",
	}, args...)); err != nil {
		t.Fatal(err)
	}
	reg := cloud.NewRegistry()
	if err := reg.Register(lcprovider.ProviderName, lcprovider.New); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, o, app.Deps{Providers: reg, Metrics: b.metrics, SkipControllerNameValidation: true})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	})
}

// addNode registers a kwok node with a cloud instance of the same name,
// waits until kwok reports it Ready (kwok's first status write carries its
// own NetworkUnavailable=False condition, which must not land after the
// test's), then sets the providerID as the node controller would.
func (b *routeBed) addNode(name string) *api.Instance {
	t := b.t
	inst, err := b.cloud.CreateInstance(b.ctx, api.CreateInstanceRequest{Name: name, Zone: "zone-a", Region: "region-1", Type: "small"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := localcluster.CreateNode(b.ctx, b.cs, name, localcluster.NodeOptions{}); err != nil {
		t.Fatal(err)
	}
	b.poll("node "+name+" Ready", func(ctx context.Context) (bool, error) {
		n, err := b.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	// Start from NetworkUnavailable=True, as a kubelet or CNI plugin that
	// waits for routes sets it, so the test sees the controller clear it.
	now := metav1.Now()
	cond, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: "WaitingForRoutes",
		Message: "set by the test", LastTransitionTime: now, LastHeartbeatTime: now,
	}}}})
	if _, err := b.cs.CoreV1().Nodes().PatchStatus(b.ctx, name, cond); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"spec":{"providerID":%q}}`, lcprovider.ProviderIDPrefix+inst.ID)
	if _, err := b.cs.CoreV1().Nodes().Patch(b.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return inst
}

func (b *routeBed) poll(what string, cond wait.ConditionWithContextFunc) {
	b.t.Helper()
	if err := wait.PollUntilContextTimeout(b.ctx, 250*time.Millisecond, 90*time.Second, true, cond); err != nil {
		b.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// table returns the cluster's routes as sorted "cidr→instance" strings.
func (b *routeBed) table(ctx context.Context) ([]string, error) {
	rs, err := b.cloud.ListRoutes(ctx, routeClusterName)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.DestinationCIDR+"→"+r.InstanceName)
	}
	sort.Strings(out)
	return out, nil
}

// expected returns the routes the named nodes' pod CIDRs call for.
func (b *routeBed) expected(ctx context.Context, names ...string) ([]string, error) {
	var out []string
	for _, n := range names {
		node, err := b.cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if len(node.Spec.PodCIDRs) != 2 {
			return nil, nil
		}
		for _, c := range node.Spec.PodCIDRs {
			out = append(out, c+"→"+n)
		}
	}
	return out, nil
}

// waitTable waits until the table holds exactly the routes of the named
// nodes plus extra.
func (b *routeBed) waitTable(extra []string, names ...string) {
	var got, want []string
	b.poll(fmt.Sprintf("routes of %v", names), func(ctx context.Context) (bool, error) {
		var err error
		if want, err = b.expected(ctx, names...); err != nil || (want == nil && len(names) > 0) {
			return false, nil
		}
		want = append(want, extra...)
		sort.Strings(want)
		got, err = b.table(ctx)
		return err == nil && strings.Join(got, " ") == strings.Join(want, " "), nil
	})
}

func (b *routeBed) condition(ctx context.Context, name string) *corev1.NodeCondition {
	n, err := b.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func (b *routeBed) waitCondition(name string, status corev1.ConditionStatus, reason, msgPart string) {
	b.poll(fmt.Sprintf("node %s NetworkUnavailable=%s/%s", name, status, reason), func(ctx context.Context) (bool, error) {
		c := b.condition(ctx, name)
		return c != nil && c.Status == status && c.Reason == reason && strings.Contains(c.Message, msgPart), nil
	})
}

func (b *routeBed) waitEvent(node, reason, msgPart string) {
	sel := fields.Set{"involvedObject.kind": "Node", "involvedObject.name": node, "reason": reason}.AsSelector().String()
	b.poll(fmt.Sprintf("%s event on %s", reason, node), func(ctx context.Context) (bool, error) {
		evs, err := b.cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, msgPart) {
				return true, nil
			}
		}
		return false, nil
	})
}

func (b *routeBed) deleteNode(name string) {
	if err := b.cs.CoreV1().Nodes().Delete(b.ctx, name, metav1.DeleteOptions{}); err != nil {
		b.t.Fatal(err)
	}
}

func (b *routeBed) counterValue(name string) float64 {
	t := b.t
	t.Helper()
	mfs, err := b.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// The route controller, run by the daemon next to the node-ipam-controller,
// programs a route per pod CIDR and backs off against a full table.
func TestRouteController(t *testing.T) {
	b := newRouteBed(t)
	orphan, err := b.cloud.CreateInstance(b.ctx, api.CreateInstanceRequest{Name: "orphan", Zone: "zone-a", Region: "region-1", Type: "small"})
	if err != nil {
		t.Fatal(err)
	}
	// A stale pod route of this cluster, and a route an operator added
	// outside the cluster CIDRs, which is not the controller's to delete.
	for name, cidr := range map[string]string{"stale": "10.244.200.0/24", "manual": "192.168.50.0/24"} {
		if _, err := b.cloud.CreateRoute(b.ctx, routeClusterName, api.CreateRouteRequest{Name: name, DestinationCIDR: cidr, InstanceID: orphan.ID}); err != nil {
			t.Fatal(err)
		}
	}
	manual := []string{"192.168.50.0/24→orphan"}
	b.startCCM()

	t.Run("routes follow nodes", func(t *testing.T) {
		b.t = t
		b.addNode("r1")
		b.addNode("r2")
		r3 := b.addNode("r3")
		b.waitTable(manual, "r1", "r2", "r3")
		for _, n := range []string{"r1", "r2", "r3"} {
			b.waitCondition(n, corev1.ConditionFalse, route.ConditionRouteCreated, "Cloud routes exist")
		}
		// Each controller writes under its own name as field manager: the
		// pod CIDRs by node-ipam, the condition by the route controller.
		r1, err := b.cs.CoreV1().Nodes().Get(b.ctx, "r1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !testbed.WrittenBy(r1, nodeipam.ControllerName, "") || !testbed.WrittenBy(r1, route.ControllerName, "status") {
			t.Errorf("r1: field managers %v, want %s and %s/status", testbed.Managers(r1), nodeipam.ControllerName, route.ControllerName)
		}

		b.deleteNode("r2")
		b.waitTable(manual, "r1", "r3")
		b.addNode("r4")
		b.waitTable(manual, "r1", "r3", "r4")
		b.waitCondition("r4", corev1.ConditionFalse, route.ConditionRouteCreated, "Cloud routes exist")

		// The instance behind r3 is terminated: its routes turn into
		// blackholes, are deleted, and cannot be created again.
		if _, err := b.cloud.DeleteInstance(b.ctx, r3.ID); err != nil {
			t.Fatal(err)
		}
		b.waitCondition("r3", corev1.ConditionTrue, route.ConditionNoRouteCreated, "")
		b.waitEvent("r3", route.ReasonFailedToCreateRoute, "r3")
		b.waitTable(manual, "r1", "r4")

		for _, n := range []string{"r1", "r3", "r4"} {
			b.deleteNode(n)
		}
		b.waitTable(manual)
	})

	t.Run("a full route table is reported without a retry storm", func(t *testing.T) {
		b.t = t
		if err := b.cs.CoreV1().Nodes().DeleteCollection(b.ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitTable(manual)
		// The manual route takes one slot: two dual-stack nodes need four
		// more, and only three fit.
		quota := 4
		if _, err := b.cloud.UpdateConfig(b.ctx, api.KnobsPatch{Quotas: &api.QuotasPatch{RoutesPerCluster: &quota}}); err != nil {
			t.Fatal(err)
		}
		b.addNode("q1")
		b.addNode("q2")
		var full, complete string
		b.poll("one node reporting the full table", func(ctx context.Context) (bool, error) {
			for _, pair := range [][2]string{{"q1", "q2"}, {"q2", "q1"}} {
				c := b.condition(ctx, pair[0])
				if c != nil && c.Status == corev1.ConditionTrue && c.Reason == route.ConditionNoRouteCreated {
					full, complete = pair[0], pair[1]
					return true, nil
				}
			}
			return false, nil
		})
		b.waitEvent(full, route.ReasonFailedToCreateRoute, "routesPerCluster")
		b.waitCondition(complete, corev1.ConditionFalse, route.ConditionRouteCreated, "")
		if got := b.counterValue(route.MetricQuotaExceededTotal); got < 1 {
			t.Errorf("%s = %v, want at least 1", route.MetricQuotaExceededTotal, got)
		}

		// Passes keep running (one ListRoutes each); the refused route
		// backs off (1s, 2s, 4s, ... between attempts) instead of being
		// retried by every pass. Counted over ten passes, whatever time
		// they take, at most every second pass may try it again.
		if err := b.cloud.ResetStats(b.ctx); err != nil {
			t.Fatal(err)
		}
		var creates, lists int64
		b.poll("ten route passes", func(ctx context.Context) (bool, error) {
			stats, err := b.cloud.Stats(ctx)
			if err != nil {
				return false, err
			}
			creates, lists = stats.Count("CreateRoute"), stats.Count("ListRoutes")
			return lists >= 10, nil
		})
		if creates > lists/2 {
			t.Errorf("%d CreateRoute calls in %d passes against a full table, want at most %d", creates, lists, lists/2)
		}

		// Deleting the complete node frees two slots; the refused route is
		// created without waiting out its backoff.
		b.deleteNode(complete)
		b.waitTable(manual, full)
		b.waitCondition(full, corev1.ConditionFalse, route.ConditionRouteCreated, "Cloud routes exist")
	})
}
