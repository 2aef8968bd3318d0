// Package profile holds the vendor doubles: providers that behave as
// hcloud's, DigitalOcean's, AWS', OpenStack's, Azure's and kube-vip's do
// in what a cloud-controller-manager sees of them at start and in its
// loops (which interfaces they return, HasClusterID), answering every Node
// as a running machine and keeping load balancers in memory. Both the
// Stratus binary of the vendor tests (test/vendors/cmd/vendor-ccm, through
// pkg/ccm) and the upstream peer (bench/cmd/upstream-ccm, through
// upstream's registry) link them, so the two run the same providers on the
// same inputs.
package profile

import (
	"context"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// Vendor is what the controller manager sees of one vendor's provider.
type Vendor struct {
	// Name is its --cloud-provider name.
	Name string
	// Instances: the provider returns InstancesV2 (kube-vip's does not:
	// it only does load balancers).
	Instances bool
	// ClusterID is HasClusterID's answer (DigitalOcean's is always false).
	ClusterID bool
}

// Vendors lists the six profiles.
func Vendors() []Vendor {
	return []Vendor{
		{Name: "hcloud", Instances: true, ClusterID: true},
		{Name: "digitalocean", Instances: true, ClusterID: false},
		{Name: "aws", Instances: true, ClusterID: true},
		{Name: "openstack", Instances: true, ClusterID: true},
		{Name: "azure", Instances: true, ClusterID: true},
		{Name: "kube-vip", Instances: false, ClusterID: true},
	}
}

// LoadBalancerIP is every double's load balancer address (the
// documentation range).
const LoadBalancerIP = "192.0.2.100"

// Factory builds the double of v, for a registry taking an io.Reader
// config (pkg/ccm's Factory, upstream's RegisterCloudProvider).
func Factory(v Vendor) func(io.Reader) (cloudprovider.Interface, error) {
	return func(io.Reader) (cloudprovider.Interface, error) {
		return &provider{v: v, lbs: map[string]bool{}}, nil
	}
}

type provider struct {
	v Vendor

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
func (p *provider) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return p, p.v.Instances }
func (p *provider) Zones() (cloudprovider.Zones, bool)                                { return nil, false }
func (p *provider) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (p *provider) Routes() (cloudprovider.Routes, bool)                              { return nil, false }
func (p *provider) ProviderName() string                                              { return p.v.Name }
func (p *provider) HasClusterID() bool                                                { return p.v.ClusterID }

func (p *provider) InstanceExists(context.Context, *corev1.Node) (bool, error)   { return true, nil }
func (p *provider) InstanceShutdown(context.Context, *corev1.Node) (bool, error) { return false, nil }

// InstanceMetadata answers every Node as a running machine of the vendor's
// cloud, with a providerID in the vendor's scheme.
func (p *provider) InstanceMetadata(_ context.Context, n *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	return &cloudprovider.InstanceMetadata{
		ProviderID:    p.v.Name + "://" + n.Name,
		InstanceType:  "standard",
		NodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}, {Type: corev1.NodeHostName, Address: n.Name}},
		Zone:          "zone-1",
		Region:        "region-1",
	}, nil
}

func lbStatus() *corev1.LoadBalancerStatus {
	return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: LoadBalancerIP}}}
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
