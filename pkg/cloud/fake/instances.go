package fake

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// InstanceExists reports whether the Node's instance is held.
func (c *Cloud) InstanceExists(ctx context.Context, n *corev1.Node) (bool, error) {
	_, ok, err := c.lookup(ctx, "InstanceExists", n.Spec.ProviderID, n.Name)
	return ok, err
}

// InstanceShutdown reports the instance's Shutdown, or InstanceNotFound.
func (c *Cloud) InstanceShutdown(ctx context.Context, n *corev1.Node) (bool, error) {
	in, ok, err := c.lookup(ctx, "InstanceShutdown", n.Spec.ProviderID, n.Name)
	if err == nil && !ok {
		err = cloudprovider.InstanceNotFound
	}
	return in.Shutdown, err
}

// InstanceMetadata returns a copy of the instance's Metadata, or
// InstanceNotFound; nil, nil when NilMetadata.
func (c *Cloud) InstanceMetadata(ctx context.Context, n *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	in, ok, err := c.lookup(ctx, "InstanceMetadata", n.Spec.ProviderID, n.Name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, cloudprovider.InstanceNotFound
	}
	if c.NilMetadata {
		return nil, nil // the buggy answer is the point
	}
	md := in.Metadata
	md.NodeAddresses = append([]corev1.NodeAddress(nil), md.NodeAddresses...)
	return &md, nil
}

// ListInstances returns every instance held, sorted by ProviderID.
func (c *Cloud) ListInstances(ctx context.Context) ([]cloud.Instance, error) {
	if err := c.enter(ctx, Call{Op: "ListInstances"}); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]cloud.Instance, 0, len(c.instances))
	for _, in := range c.instances {
		if !c.hidden[in.ProviderID] {
			out = append(out, in)
		}
	}
	sortInstances(out)
	return out, nil
}

func sortInstances(out []cloud.Instance) {
	sort.Slice(out, func(i, j int) bool { return out[i].ProviderID < out[j].ProviderID })
}

// The legacy Instances, answered from the same instances; an instance ID
// is the providerID after its "scheme://".

// NodeAddresses returns the named node's addresses.
func (c *Cloud) NodeAddresses(ctx context.Context, name types.NodeName) ([]corev1.NodeAddress, error) {
	in, err := c.legacy(ctx, "NodeAddresses", "", string(name))
	return in.Metadata.NodeAddresses, err
}

// NodeAddressesByProviderID returns the instance's addresses.
func (c *Cloud) NodeAddressesByProviderID(ctx context.Context, id string) ([]corev1.NodeAddress, error) {
	in, err := c.legacy(ctx, "NodeAddressesByProviderID", id, "")
	return in.Metadata.NodeAddresses, err
}

// InstanceID returns the named node's instance ID.
func (c *Cloud) InstanceID(ctx context.Context, name types.NodeName) (string, error) {
	in, err := c.legacy(ctx, "InstanceID", "", string(name))
	if err != nil {
		return "", err
	}
	if i := strings.Index(in.ProviderID, "://"); i >= 0 {
		return in.ProviderID[i+3:], nil
	}
	return in.ProviderID, nil
}

// InstanceType returns the named node's instance type.
func (c *Cloud) InstanceType(ctx context.Context, name types.NodeName) (string, error) {
	in, err := c.legacy(ctx, "InstanceType", "", string(name))
	return in.Metadata.InstanceType, err
}

// InstanceTypeByProviderID returns the instance's type.
func (c *Cloud) InstanceTypeByProviderID(ctx context.Context, id string) (string, error) {
	in, err := c.legacy(ctx, "InstanceTypeByProviderID", id, "")
	return in.Metadata.InstanceType, err
}

// AddSSHKeyToAllInstances is not implemented, as in most providers.
func (c *Cloud) AddSSHKeyToAllInstances(ctx context.Context, _ string, _ []byte) error {
	if err := c.enter(ctx, Call{Op: "AddSSHKeyToAllInstances"}); err != nil {
		return err
	}
	return cloudprovider.NotImplemented
}

// CurrentNodeName returns hostname.
func (c *Cloud) CurrentNodeName(ctx context.Context, hostname string) (types.NodeName, error) {
	return types.NodeName(hostname), c.enter(ctx, Call{Op: "CurrentNodeName"})
}

// InstanceExistsByProviderID reports whether the instance is held.
func (c *Cloud) InstanceExistsByProviderID(ctx context.Context, id string) (bool, error) {
	_, ok, err := c.lookup(ctx, "InstanceExistsByProviderID", id, "")
	return ok, err
}

// InstanceShutdownByProviderID reports the instance's Shutdown.
func (c *Cloud) InstanceShutdownByProviderID(ctx context.Context, id string) (bool, error) {
	in, err := c.legacy(ctx, "InstanceShutdownByProviderID", id, "")
	return in.Shutdown, err
}

func (c *Cloud) legacy(ctx context.Context, op, id, name string) (cloud.Instance, error) {
	in, ok, err := c.lookup(ctx, op, id, name)
	if err == nil && !ok {
		err = cloudprovider.InstanceNotFound
	}
	return in, err
}

// GetZone is not implemented: Stratus never runs on the machine it asks
// about.
func (c *Cloud) GetZone(ctx context.Context) (cloudprovider.Zone, error) {
	if err := c.enter(ctx, Call{Op: "GetZone"}); err != nil {
		return cloudprovider.Zone{}, err
	}
	return cloudprovider.Zone{}, cloudprovider.NotImplemented
}

// GetZoneByProviderID returns the instance's zone and region.
func (c *Cloud) GetZoneByProviderID(ctx context.Context, id string) (cloudprovider.Zone, error) {
	in, err := c.legacy(ctx, "GetZoneByProviderID", id, "")
	return cloudprovider.Zone{FailureDomain: in.Metadata.Zone, Region: in.Metadata.Region}, err
}

// GetZoneByNodeName returns the named node's zone and region.
func (c *Cloud) GetZoneByNodeName(ctx context.Context, name types.NodeName) (cloudprovider.Zone, error) {
	in, err := c.legacy(ctx, "GetZoneByNodeName", "", string(name))
	return cloudprovider.Zone{FailureDomain: in.Metadata.Zone, Region: in.Metadata.Region}, err
}
