package daemon_test

import (
	"context"

	"net/netip"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/ownership"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestHybridClusterLeavesForeignNodesAlone: a cluster mixing localcloud's
// Nodes with Nodes of a provider Stratus does not run (providerID
// onprem://..., or no providerID and the platform annotation naming edge),
// under --cloud-provider-platforms=localcloud and every node controller,
// the service controller and routes. The localcloud Nodes are initialized,
// routed and load-balanced, the one whose instance is gone is deleted; the
// foreign ones are never initialized, tainted, deleted, routed or made
// backends, although two of them are NotReady and unknown to the cloud.
func TestHybridClusterLeavesForeignNodesAlone(t *testing.T) {
	env := testbed.Start(t)
	env.StartKwok(t)
	ctx := testbed.Context(t, 5*time.Minute)
	cs := env.Clientset
	srv, conf := startCloud(t, store.Pools{Internal: netip.MustParsePrefix("127.1.205.0/24"), VIP: netip.MustParsePrefix("127.0.205.0/24")})
	lc, err := lcclient.New(srv.URL(), srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	metrics := startHybridCCM(t, env, conf)

	instances := map[string]string{} // node name → instance ID
	for _, name := range []string{"lc-a", "lc-b", "lc-gone"} {
		inst, err := lc.CreateInstance(ctx, api.CreateInstanceRequest{Name: name, Zone: "zone-a", Region: "region-1", Type: "small"})
		if err != nil {
			t.Fatal(err)
		}
		instances[name] = inst.ID
	}
	register := func(name string, o localcluster.NodeOptions, annotations map[string]string, ready corev1.ConditionStatus) {
		t.Helper()
		n := localcluster.NewNode(name, o)
		for k, v := range annotations {
			n.Annotations[k] = v
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if o.Unmanaged {
			if err := localcluster.SetReady(ctx, cs, name, ready); err != nil {
				t.Fatal(err)
			}
		}
	}
	register("lc-a", localcluster.NodeOptions{}, nil, "")
	register("lc-b", localcluster.NodeOptions{}, nil, "")
	register("lc-gone", localcluster.NodeOptions{ProviderID: lcprovider.ProviderID(instances["lc-gone"]), Unmanaged: true}, nil, corev1.ConditionFalse)
	register("onprem-a", localcluster.NodeOptions{ProviderID: "onprem://rack1/onprem-a"}, nil, "")
	register("onprem-b", localcluster.NodeOptions{ProviderID: "onprem://rack1/onprem-b", Unmanaged: true}, nil, corev1.ConditionFalse)
	register("edge-a", localcluster.NodeOptions{Unmanaged: true}, map[string]string{ownership.AnnotationPlatform: "edge"}, corev1.ConditionFalse)
	if _, err := lc.DeleteInstance(ctx, instances["lc-gone"]); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, lbService("default", "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	poll := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	poll("the localcloud nodes initialized", func(ctx context.Context) (bool, error) {
		for _, name := range []string{"lc-a", "lc-b"} {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || uninitialized(n) {
				return false, nil
			}
		}
		return true, nil
	})
	poll("lc-gone deleted", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, "lc-gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	want := []string{instances["lc-a"], instances["lc-b"]}
	sort.Strings(want)
	poll("the load balancer's backends to be the localcloud nodes", func(ctx context.Context) (bool, error) {
		lbs, err := lc.ListAllLoadBalancers(ctx, lcclient.ListOptions{})
		if err != nil || len(lbs) != 1 {
			return false, nil
		}
		got := slices.Sorted(slices.Values(lbs[0].Backends))
		return slices.Equal(got, want), nil
	})
	poll("routes of the localcloud nodes", func(ctx context.Context) (bool, error) {
		rs, err := lc.ListRoutes(ctx, routeClusterName)
		if err != nil {
			return false, nil
		}
		var targets []string
		for _, r := range rs {
			targets = append(targets, r.InstanceName)
		}
		sort.Strings(targets)
		return slices.Equal(targets, []string{"lc-a", "lc-b"}), nil
	})

	// Three more monitor periods, however long they take, with the foreign
	// NotReady Nodes in them.
	after := periodsOf(t, metrics) + 3
	poll("three more monitor periods", func(context.Context) (bool, error) { return periodsOf(t, metrics) >= after, nil })
	for _, name := range []string{"onprem-a", "onprem-b", "edge-a"} {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("foreign node %s: %v", name, err)
			continue
		}
		if !uninitialized(n) {
			t.Errorf("foreign node %s initialized: taints %v", name, n.Spec.Taints)
		}
		if nodelifecycle.HasShutdownTaint(n) {
			t.Errorf("foreign node %s tainted shut down", name)
		}
	}
	rs, err := lc.ListRoutes(ctx, routeClusterName)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.InstanceName != "lc-a" && r.InstanceName != "lc-b" {
			t.Errorf("route %s → %s to a foreign node", r.DestinationCIDR, r.InstanceName)
		}
	}
	if got := metricValue(t, metrics, node.MetricForeignNodes, ""); got != 3 {
		t.Errorf("%s = %v, want 3", node.MetricForeignNodes, got)
	}
}

func startHybridCCM(t *testing.T, env *testbed.Env, conf string) *prometheus.Registry {
	t.Helper()
	o := app.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{
		"--cloud-provider=" + lcprovider.ProviderName, "--cloud-config=" + conf,
		"--kubeconfig=" + env.Kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers=cloud-node-controller,cloud-node-lifecycle-controller,service-lb-controller,node-ipam-controller,node-route-controller",
		"--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr=10.244.0.0/16",
		"--route-reconciliation-period=1s", "--node-monitor-period=1s",
		"--cloud-provider-platforms=localcloud",
	}); err != nil {
		t.Fatal(err)
	}
	metrics := prometheus.NewRegistry()
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.Run(runCtx, o, app.Deps{Providers: providers(t), Metrics: metrics, SkipControllerNameValidation: true})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	})
	return metrics
}

func uninitialized(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
}

// periodsOf counts the lifecycle controller's completed monitor periods.
func periodsOf(t *testing.T, g prometheus.Gatherer) uint64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == nodelifecycle.MetricPeriodDuration && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}
