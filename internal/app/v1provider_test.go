package app_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const v1OnlyName = "v1only"

// v1Machine is one instance of v1OnlyProvider, named like its Node.
type v1Machine struct {
	id       string
	ip       string
	shutdown bool
}

// v1OnlyProvider implements only the legacy Instances and Zones
// interfaces, as providers written before InstancesV2 do. It knows its
// machines by node name and by "v1only://<id>".
type v1OnlyProvider struct {
	mu       sync.Mutex
	machines map[string]v1Machine
	// noIDs makes InstanceID NotImplemented: a provider that knows its
	// machines by node name only.
	noIDs bool
}

var (
	_ cloudprovider.Interface = (*v1OnlyProvider)(nil)
	_ cloudprovider.Instances = (*v1OnlyProvider)(nil)
	_ cloudprovider.Zones     = (*v1OnlyProvider)(nil)
)

func (p *v1OnlyProvider) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (p *v1OnlyProvider) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return nil, false }
func (p *v1OnlyProvider) Instances() (cloudprovider.Instances, bool)                        { return p, true }
func (p *v1OnlyProvider) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return nil, false }
func (p *v1OnlyProvider) Zones() (cloudprovider.Zones, bool)                                { return p, true }
func (p *v1OnlyProvider) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (p *v1OnlyProvider) Routes() (cloudprovider.Routes, bool)                              { return nil, false }
func (p *v1OnlyProvider) ProviderName() string                                              { return v1OnlyName }
func (p *v1OnlyProvider) HasClusterID() bool                                                { return true }

func (p *v1OnlyProvider) byName(name types.NodeName) (v1Machine, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.machines[string(name)]
	if !ok {
		return v1Machine{}, cloudprovider.InstanceNotFound
	}
	return m, nil
}

func (p *v1OnlyProvider) byProviderID(id string) (v1Machine, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.machines {
		if v1OnlyName+"://"+m.id == id {
			return m, nil
		}
	}
	return v1Machine{}, cloudprovider.InstanceNotFound
}

func addrs(m v1Machine) []corev1.NodeAddress {
	return []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: m.ip}}
}

func zone() cloudprovider.Zone {
	return cloudprovider.Zone{FailureDomain: "v1-zone-a", Region: "v1-region"}
}

func (p *v1OnlyProvider) NodeAddresses(_ context.Context, name types.NodeName) ([]corev1.NodeAddress, error) {
	m, err := p.byName(name)
	return addrs(m), err
}

func (p *v1OnlyProvider) NodeAddressesByProviderID(_ context.Context, id string) ([]corev1.NodeAddress, error) {
	m, err := p.byProviderID(id)
	return addrs(m), err
}

func (p *v1OnlyProvider) InstanceID(_ context.Context, name types.NodeName) (string, error) {
	if p.noIDs {
		return "", cloudprovider.NotImplemented
	}
	m, err := p.byName(name)
	return m.id, err
}

func (p *v1OnlyProvider) InstanceType(_ context.Context, name types.NodeName) (string, error) {
	_, err := p.byName(name)
	return "v1.small", err
}

func (p *v1OnlyProvider) InstanceTypeByProviderID(_ context.Context, id string) (string, error) {
	_, err := p.byProviderID(id)
	return "v1.small", err
}

func (p *v1OnlyProvider) AddSSHKeyToAllInstances(context.Context, string, []byte) error {
	return cloudprovider.NotImplemented
}

func (p *v1OnlyProvider) CurrentNodeName(_ context.Context, hostname string) (types.NodeName, error) {
	return types.NodeName(hostname), nil
}

func (p *v1OnlyProvider) InstanceExistsByProviderID(_ context.Context, id string) (bool, error) {
	_, err := p.byProviderID(id)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (p *v1OnlyProvider) InstanceShutdownByProviderID(_ context.Context, id string) (bool, error) {
	m, err := p.byProviderID(id)
	return m.shutdown, err
}

func (p *v1OnlyProvider) GetZone(context.Context) (cloudprovider.Zone, error) { return zone(), nil }

func (p *v1OnlyProvider) GetZoneByProviderID(_ context.Context, id string) (cloudprovider.Zone, error) {
	_, err := p.byProviderID(id)
	return zone(), err
}

func (p *v1OnlyProvider) GetZoneByNodeName(_ context.Context, name types.NodeName) (cloudprovider.Zone, error) {
	_, err := p.byName(name)
	return zone(), err
}

// TestNodeControllersServeV1OnlyProvider runs the daemon in-process with
// providers that have no InstancesV2, one control plane for both cases.
func TestNodeControllersServeV1OnlyProvider(t *testing.T) {
	env := testbed.Start(t)
	t.Run("with instance IDs", func(t *testing.T) { testV1WithInstanceIDs(t, env) })
	t.Run("without instance IDs", func(t *testing.T) { testV1WithoutInstanceIDs(t, env) })
}

// runV1Daemon runs the node controllers with provider until the test ends
// and returns the registry its metrics are in.
func runV1Daemon(t *testing.T, ctx context.Context, env *testbed.Env, provider *v1OnlyProvider) *prometheus.Registry {
	t.Helper()
	reg := cloud.NewRegistry()
	if err := reg.Register(v1OnlyName, func(io.Reader) (cloudprovider.Interface, error) { return provider, nil }); err != nil {
		t.Fatal(err)
	}
	o := app.NewOptions()
	o.CloudProvider = v1OnlyName
	o.Kubeconfig = env.Kubeconfig
	o.LeaderElect = false
	o.SecureServing.BindPort = 0
	o.Controllers = []string{node.ControllerName, nodelifecycle.ControllerName}
	o.NodeMonitorPeriod = time.Second

	metrics := prometheus.NewRegistry()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- app.Run(runCtx, o, app.Deps{Providers: reg, Metrics: metrics, SkipControllerNameValidation: true})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	return metrics
}

// testV1WithInstanceIDs: the node controller initializes a Node through
// the legacy calls, and the lifecycle controller deletes a NotReady Node
// whose machine is gone and taints one whose machine is stopped.
func testV1WithInstanceIDs(t *testing.T, env *testbed.Env) {
	cs := env.Clientset
	ctx := testbed.Context(t, 2*time.Minute)
	provider := &v1OnlyProvider{machines: map[string]v1Machine{
		"v1-node":    {id: "i-100", ip: "10.1.0.10"},
		"v1-stopped": {id: "i-200", ip: "10.1.0.20", shutdown: true},
	}}
	runV1Daemon(t, ctx, env, provider)

	for _, name := range []string{"v1-node", "v1-gone", "v1-stopped"} {
		if _, err := localcluster.CreateNode(ctx, cs, name, localcluster.NodeOptions{Unmanaged: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"v1-gone", "v1-stopped"} {
		// A Node with no Ready condition counts as not ready, as
		// upstream's: the lifecycle controller may delete v1-gone, whose
		// machine does not exist, before it is marked NotReady here.
		err := localcluster.SetReady(ctx, cs, name, corev1.ConditionFalse)
		gone := name == "v1-gone" && apierrors.IsNotFound(err)
		if err != nil && !gone {
			t.Fatal(err)
		}
	}

	var last *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "v1-node", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = n
		return !hasTaint(n, cloudproviderapi.TaintExternalCloudProvider), nil
	})
	if err != nil {
		t.Fatalf("v1-node not initialized: %v; last seen: spec=%+v labels=%v", err, last.Spec, last.Labels)
	}
	if got, want := last.Spec.ProviderID, "v1only://i-100"; got != want {
		t.Errorf("providerID = %q, want %q (built from InstanceID and the provider name)", got, want)
	}
	for k, want := range map[string]string{
		corev1.LabelInstanceTypeStable: "v1.small",
		corev1.LabelTopologyZone:       "v1-zone-a",
		corev1.LabelTopologyRegion:     "v1-region",
	} {
		if got := last.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if !slices.Contains(last.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.1.0.10"}) {
		t.Errorf("addresses = %v, want InternalIP 10.1.0.10", last.Status.Addresses)
	}

	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, "v1-gone", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("v1-gone, whose machine does not exist, was not deleted: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "v1-stopped", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return hasTaint(n, cloudproviderapi.TaintNodeShutdown), nil
	})
	if err != nil {
		t.Fatalf("v1-stopped, whose machine is shut down, was not tainted: %v", err)
	}
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// testV1WithoutInstanceIDs: a legacy provider whose InstanceID is
// NotImplemented gets its Nodes initialized as upstream initializes them
// (addresses, labels, taint removed, no providerID), and the lifecycle
// controller leaves such a NotReady Node alone, without warning about it
// every period.
func testV1WithoutInstanceIDs(t *testing.T, env *testbed.Env) {
	cs := env.Clientset
	ctx := testbed.Context(t, 2*time.Minute)
	if err := cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	provider := &v1OnlyProvider{noIDs: true, machines: map[string]v1Machine{
		"legacy-ready":    {ip: "10.2.0.10"},
		"legacy-notready": {ip: "10.2.0.20"},
	}}
	metrics := runV1Daemon(t, ctx, env, provider)
	for _, name := range []string{"legacy-ready", "legacy-notready"} {
		if _, err := localcluster.CreateNode(ctx, cs, name, localcluster.NodeOptions{Unmanaged: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := localcluster.SetReady(ctx, cs, "legacy-notready", corev1.ConditionFalse); err != nil {
		t.Fatal(err)
	}
	for name, ip := range map[string]string{"legacy-ready": "10.2.0.10", "legacy-notready": "10.2.0.20"} {
		n := waitInitialized(t, ctx, cs, name)
		if n.Spec.ProviderID != "" {
			t.Errorf("node %s: providerID = %q, want none (the provider has no instance IDs)", name, n.Spec.ProviderID)
		}
		if got := n.Labels[corev1.LabelTopologyZone]; got != "v1-zone-a" {
			t.Errorf("node %s: zone label = %q, want v1-zone-a (asked by node name)", name, got)
		}
		if got := n.Labels[corev1.LabelInstanceTypeStable]; got != "v1.small" {
			t.Errorf("node %s: instance type label = %q, want v1.small", name, got)
		}
		if !slices.Contains(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}) {
			t.Errorf("node %s: addresses = %v, want InternalIP %s", name, n.Status.Addresses, ip)
		}
	}

	// Three lifecycle periods after both Nodes exist, the NotReady one is
	// still there, untainted, and no period warned about it.
	start := periods(t, metrics)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return periods(t, metrics) >= start+3, nil
	})
	if err != nil {
		t.Fatalf("lifecycle controller did not run 3 periods: %v", err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "legacy-notready", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("NotReady node of a provider without instance IDs: %v (it must never be deleted)", err)
	}
	if hasTaint(n, cloudproviderapi.TaintNodeShutdown) {
		t.Error("NotReady node of a provider without instance IDs was tainted as shut down")
	}
	evs, err := cs.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == "legacy-notready" && e.Type == corev1.EventTypeWarning {
			t.Errorf("warning event about the node: %s %s", e.Reason, e.Note)
		}
	}
}

func waitInitialized(t *testing.T, ctx context.Context, cs kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	var last *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = n
		return !hasTaint(n, cloudproviderapi.TaintExternalCloudProvider), nil
	})
	if err != nil {
		t.Fatalf("node %s not initialized: %v; last seen: spec=%+v", name, err, last.Spec)
	}
	return last
}

// periods is how many lifecycle periods have completed.
func periods(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == nodelifecycle.MetricPeriodDuration && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}
