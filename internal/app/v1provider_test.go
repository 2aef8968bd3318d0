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
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/controllers/node"
	"github.com/stratus-ccm/stratus/pkg/controllers/nodelifecycle"
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
// a provider that has no InstancesV2: the node controller initializes a
// Node through the legacy calls, and the lifecycle controller deletes a
// NotReady Node whose machine is gone and taints one whose machine is
// stopped.
func TestNodeControllersServeV1OnlyProvider(t *testing.T) {
	env := testbed.Start(t)
	cs := env.Clientset
	ctx := testbed.Context(t, 2*time.Minute)

	provider := &v1OnlyProvider{machines: map[string]v1Machine{
		"v1-node":    {id: "i-100", ip: "10.1.0.10"},
		"v1-stopped": {id: "i-200", ip: "10.1.0.20", shutdown: true},
	}}
	reg := cloud.NewRegistry()
	if err := reg.Register(v1OnlyName, func(io.Reader) (cloudprovider.Interface, error) { return provider, nil }); err != nil {
		t.Fatal(err)
	}
	o := app.NewOptions()
	o.CloudProvider = v1OnlyName
	o.Kubeconfig = env.Kubeconfig
	o.LeaderElect = false
	o.SecurePort = 0
	o.Controllers = []string{node.ControllerName, nodelifecycle.ControllerName}
	o.NodeMonitorPeriod = time.Second

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- app.Run(runCtx, o, app.Deps{Providers: reg, Metrics: prometheus.NewRegistry()})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})

	for _, name := range []string{"v1-node", "v1-gone", "v1-stopped"} {
		if _, err := localcluster.CreateNode(ctx, cs, name, localcluster.NodeOptions{Unmanaged: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"v1-gone", "v1-stopped"} {
		if err := localcluster.SetReady(ctx, cs, name, corev1.ConditionFalse); err != nil {
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
