// Command vendor-ccm is a cloud-controller-manager built through pkg/ccm,
// as a vendor builds theirs, with a stand-in provider under each vendor's
// --cloud-provider name. The stand-ins behave as the vendors' providers do
// in what the daemon checks at start: which interfaces they return and
// HasClusterID. Their instances answer from the Node alone; the vendor
// tests use them to run the vendors' published arguments and RBAC.
package main

import (
	"context"
	"io"

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
			return &provider{v: v}, nil
		}})
	}
	ccm.Main(cfg)
}

type provider struct{ v vendor }

var (
	_ cloudprovider.Interface   = (*provider)(nil)
	_ cloudprovider.InstancesV2 = (*provider)(nil)
)

func (p *provider) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (p *provider) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return nil, false }
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
