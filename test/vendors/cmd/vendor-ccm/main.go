// Command vendor-ccm is a cloud-controller-manager built through pkg/ccm,
// as a vendor builds theirs, with a stand-in provider under each vendor's
// --cloud-provider name. The stand-ins behave as the vendors' providers do
// in what the daemon checks at start: which interfaces they return and
// HasClusterID. Their instances answer from the Node alone and their load
// balancers are kept in memory, all at one address; the vendor tests use
// them to run the vendors' published arguments and RBAC.
package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/ccm"
)

// vendor is what the daemon sees of a vendor's provider at start.
type vendor struct {
	name string
	// instances: the provider returns InstancesV2 (kube-vip's does not:
	// it only does load balancers).
	instances bool
	// clusterID is HasClusterID's answer (DigitalOcean's is always false).
	clusterID bool
}

var vendors = []vendor{
	{name: "hcloud", instances: true, clusterID: true},
	{name: "digitalocean", instances: true, clusterID: false},
	{name: "aws", instances: true, clusterID: true},
	{name: "openstack", instances: true, clusterID: true},
	{name: "azure", instances: true, clusterID: true},
	{name: "kube-vip", instances: false, clusterID: true},
}

func main() {
	cfg := ccm.Config{}
	for _, v := range vendors {
		cfg.Providers = append(cfg.Providers, ccm.Provider{Name: v.name, Factory: func(io.Reader) (cloudprovider.Interface, error) {
			return &provider{v: v, lbs: map[string]bool{}}, nil
		}})
	}
	ccm.Main(cfg)
}

type provider struct {
	v vendor

	mu  sync.Mutex
	lbs map[string]bool // load balancers by name
}

var (
	_ cloudprovider.Interface    = (*provider)(nil)
	_ cloudprovider.InstancesV2  = (*provider)(nil)
	_ cloudprovider.LoadBalancer = (*provider)(nil)
)

func (p *provider) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (p *provider) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return p, true }
func (p *provider) Instances() (cloudprovider.Instances, bool)                        { return nil, false }
func (p *provider) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return p, p.v.instances }
func (p *provider) Zones() (cloudprovider.Zones, bool)                                { return nil, false }
func (p *provider) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (p *provider) Routes() (cloudprovider.Routes, bool)                              { return nil, false }
func (p *provider) ProviderName() string                                              { return p.v.name }
func (p *provider) HasClusterID() bool                                                { return p.v.clusterID }

func (p *provider) InstanceExists(context.Context, *corev1.Node) (bool, error)   { return true, nil }
func (p *provider) InstanceShutdown(context.Context, *corev1.Node) (bool, error) { return false, nil }

// InstanceMetadata answers every Node as a running machine of the vendor's
// cloud, with a providerID in the vendor's scheme.
func (p *provider) InstanceMetadata(_ context.Context, n *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	return &cloudprovider.InstanceMetadata{
		ProviderID:    p.v.name + "://" + n.Name,
		InstanceType:  "standard",
		NodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}, {Type: corev1.NodeHostName, Address: n.Name}},
		Zone:          "zone-1",
		Region:        "region-1",
	}, nil
}

// lbStatus is every load balancer's address: the documentation range.
func lbStatus() *corev1.LoadBalancerStatus {
	return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.100"}}}
}

func (p *provider) GetLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.lbs[p.GetLoadBalancerName(ctx, cluster, svc)] {
		return nil, false, nil
	}
	return lbStatus(), true, nil
}

func (p *provider) GetLoadBalancerName(_ context.Context, cluster string, svc *corev1.Service) string {
	return fmt.Sprintf("%s-%s", cluster, svc.UID)
}

func (p *provider) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, _ []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lbs[p.GetLoadBalancerName(ctx, cluster, svc)] = true
	return lbStatus(), nil
}

func (p *provider) UpdateLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) error {
	return nil
}

func (p *provider) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.lbs, p.GetLoadBalancerName(ctx, cluster, svc))
	return nil
}
