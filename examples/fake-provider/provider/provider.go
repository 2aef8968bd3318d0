// Package provider configures upstream's fake cloud provider
// (k8s.io/cloud-provider/fake) as a small, consistent cloud: every Node
// the cluster registers is a machine with an address, a type and a zone,
// and every load balancer answers on one external IP. Upstream's fake is
// a test spy whose answers are fields; this package only fills them in.
package provider

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"

	"github.com/stratus-ccm/stratus/pkg/ccm"
)

// Name is the --cloud-provider value that selects this provider.
const Name = "fake"

// What the fake cloud answers for every machine and load balancer.
const (
	InstanceType = "fake.small"
	Zone         = "fake-zone-a"
	Region       = "fake-region"
	// ExternalIP is the ingress IP of every load balancer.
	ExternalIP = "203.0.113.10"
	// NodeIP is the InternalIP of every machine.
	NodeIP = "10.0.0.1"
)

// New builds the provider. It takes ccm.Inputs to show where a provider
// gets the cluster name, the cluster CIDR and a node lister; this one uses
// only the cluster name, to refuse an empty one.
func New(_ context.Context, in ccm.Inputs) (cloudprovider.Interface, error) {
	if in.ClusterName == "" {
		return nil, fmt.Errorf("fake provider: --cluster-name is empty")
	}
	return &fake.Cloud{
		Provider:          Name,
		EnableInstancesV2: true,
		// InstancesV2: every Node's machine exists, is running, and has
		// the provider ID the fake derives from its node name.
		ExistsByProviderID: true,
		OverrideInstanceMetadata: func(_ context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
			return &cloudprovider.InstanceMetadata{
				ProviderID:    Name + "://" + node.Name,
				InstanceType:  InstanceType,
				NodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: NodeIP}},
				Zone:          Zone,
				Region:        Region,
			}, nil
		},
		Zone:       cloudprovider.Zone{FailureDomain: Zone, Region: Region},
		ExternalIP: net.ParseIP(ExternalIP),
		// Upstream's fake keeps load balancers in this map; it must exist
		// before concurrent service workers write to it.
		Balancers: map[string]fake.Balancer{},
		RouteMap:  map[string]*fake.Route{},
	}, nil
}
