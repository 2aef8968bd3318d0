// Package profile holds the vendor doubles: providers that behave as
// hcloud's, DigitalOcean's, AWS', OpenStack's, Azure's and kube-vip's do
// in what a cloud-controller-manager sees of them (which interfaces they
// return and when, HasClusterID, what their constructors refuse, what
// Initialize asks of the client builder), answering every Node as a running
// machine and keeping load balancers and routes in memory. Both the
// Stratus binary of the vendor tests (test/vendors/cmd/vendor-ccm, through
// pkg/ccm) and the upstream peer (bench/cmd/upstream-ccm, through
// upstream's registry) link them, so the two run the same providers on the
// same inputs. Each behaviour is read from the vendor's provider source
// (see inputs.go); a test reads what a double did from its state directory
// (StateDirEnv).
package profile

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// Vendor is what the controller manager sees of one vendor's provider.
type Vendor struct {
	// Name is the vendor's key: its testdata directory.
	Name string
	// Provider is its --cloud-provider name (kube-vip's is "kubevip").
	Provider string
	// Command is the vendor's own binary name, for vendors whose main sets
	// flag defaults: a binary run under that name takes FlagDefaults.
	Command string
	// FlagDefaults are the defaults the vendor's main sets before parsing
	// the command line (DigitalOcean's and kube-vip's name their provider
	// and skip the authentication lookup).
	FlagDefaults map[string]string
	// Instances: the provider returns InstancesV2 (kube-vip's does not:
	// it only does load balancers).
	Instances bool
	// ClusterID is HasClusterID's answer (hcloud's, DigitalOcean's and
	// kube-vip's are always false).
	ClusterID bool
	// InitClient is the client name the provider's Initialize asks the
	// client builder for.
	InitClient string
	// TakesClusterCIDR: the vendor's main hands --cluster-cidr to the
	// provider's constructor (hcloud's NewCloud), whose routes need it to
	// parse as one CIDR (newRoutes; Routes() is false otherwise).
	TakesClusterCIDR bool
	// setup reads the provider's inputs (environment, --cloud-config) as
	// the vendor's constructor does, refusing with its message what it
	// refuses.
	setup func(getenv func(string) string, config []byte) (settings, error)
}

// settings is what a double's constructor made of its inputs.
type settings struct {
	// routes: Routes() returns true.
	routes bool
	// checkGateway: CreateRoute refuses a target whose InternalIP is not
	// among the route's TargetNodeAddresses (hcloud's check that the
	// server's private address is the route's gateway).
	checkGateway bool
}

// Vendors lists the six profiles.
func Vendors() []Vendor {
	return []Vendor{
		{Name: "hcloud", Provider: "hcloud", Instances: true, InitClient: "hccm-event-broadcaster", TakesClusterCIDR: true, setup: hcloudSetup},
		{Name: "digitalocean", Provider: "digitalocean", Command: "digitalocean-cloud-controller-manager",
			FlagDefaults: map[string]string{"cloud-provider": "digitalocean", "authentication-skip-lookup": "true"},
			Instances:    true, InitClient: "do-shared-informers", setup: digitaloceanSetup},
		{Name: "aws", Provider: "aws", Instances: true, ClusterID: true, InitClient: "aws-cloud-provider", setup: awsSetup},
		{Name: "openstack", Provider: "openstack", Instances: true, ClusterID: true, InitClient: "cloud-controller-manager", setup: openstackSetup},
		{Name: "azure", Provider: "azure", Instances: true, ClusterID: true, InitClient: "azure-cloud-provider", setup: azureSetup},
		{Name: "kube-vip", Provider: "kubevip", Command: "kube-vip-cloud-provider",
			FlagDefaults: map[string]string{"cloud-provider": "kubevip", "allow-untagged-cloud": "true", "authentication-skip-lookup": "true"},
			InitClient:   "do-shared-informers", setup: kubevipSetup},
	}
}

// ByCommand returns the vendor whose own binary is named as argv0 (its
// base name), if any: a main run under that name behaves as the vendor's.
func ByCommand(argv0 string) (Vendor, bool) {
	base := filepath.Base(argv0)
	for _, v := range Vendors() {
		if v.Command != "" && v.Command == base {
			return v, true
		}
	}
	return Vendor{}, false
}

// ByProvider returns the vendor whose provider is named name.
func ByProvider(name string) (Vendor, bool) {
	for _, v := range Vendors() {
		if v.Provider == name {
			return v, true
		}
	}
	return Vendor{}, false
}

// LoadBalancerIP is every double's load balancer address (the
// documentation range).
const LoadBalancerIP = "192.0.2.100"

// NodeInternalIP is the InternalIP every double reports for a Node.
const NodeInternalIP = "192.0.2.10"

// Factory builds the double of v, for a registry taking an io.Reader
// config (pkg/ccm's Factory, upstream's RegisterCloudProvider): New
// without a cluster CIDR.
func Factory(v Vendor) func(io.Reader) (cloudprovider.Interface, error) {
	return func(config io.Reader) (cloudprovider.Interface, error) { return New(v)(config, "") }
}

// New builds the double of v from the cloud config and, where the vendor's
// main passes it (TakesClusterCIDR), --cluster-cidr. It reads the process
// environment and the config as the vendor's constructor does and fails
// as it fails.
func New(v Vendor) func(config io.Reader, clusterCIDR string) (cloudprovider.Interface, error) {
	return func(config io.Reader, clusterCIDR string) (cloudprovider.Interface, error) {
		var data []byte
		if config != nil {
			var err error
			if data, err = io.ReadAll(config); err != nil {
				return nil, fmt.Errorf("read cloud config: %w", err)
			}
		}
		s, err := v.setup(os.Getenv, data)
		if err != nil {
			return nil, err
		}
		if v.TakesClusterCIDR {
			_, _, err := net.ParseCIDR(clusterCIDR)
			s.routes = s.routes && err == nil
		}
		st := openState()
		return &provider{v: v, s: s, state: st, lbs: map[string]bool{}, routes: newRoutes(st, s.checkGateway)}, nil
	}
}

type provider struct {
	v      Vendor
	s      settings
	state  state
	routes *routes

	mu  sync.Mutex
	lbs map[string]bool // load balancers by name
}

var (
	_ cloudprovider.Interface    = (*provider)(nil)
	_ cloudprovider.InstancesV2  = (*provider)(nil)
	_ cloudprovider.LoadBalancer = (*provider)(nil)
)

func (p *provider) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return p, true }
func (p *provider) Instances() (cloudprovider.Instances, bool)       { return nil, false }
func (p *provider) InstancesV2() (cloudprovider.InstancesV2, bool)   { return p, p.v.Instances }
func (p *provider) Zones() (cloudprovider.Zones, bool)               { return nil, false }
func (p *provider) Clusters() (cloudprovider.Clusters, bool)         { return nil, false }
func (p *provider) ProviderName() string                             { return p.v.Provider }
func (p *provider) HasClusterID() bool                               { return p.v.ClusterID }

// Routes answers as the vendor's does with the inputs it was built from.
func (p *provider) Routes() (cloudprovider.Routes, bool) {
	if !p.s.routes {
		return nil, false
	}
	return p.routes, true
}

func (p *provider) InstanceExists(context.Context, *corev1.Node) (bool, error)   { return true, nil }
func (p *provider) InstanceShutdown(context.Context, *corev1.Node) (bool, error) { return false, nil }

// InstanceMetadata answers every Node as a running machine of the vendor's
// cloud, with a providerID in the vendor's scheme.
func (p *provider) InstanceMetadata(_ context.Context, n *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	return &cloudprovider.InstanceMetadata{
		ProviderID:    p.v.Provider + "://" + n.Name,
		InstanceType:  "standard",
		NodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: NodeInternalIP}, {Type: corev1.NodeHostName, Address: n.Name}},
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
