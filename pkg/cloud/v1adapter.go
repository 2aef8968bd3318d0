package cloud

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// InstancesV2FromV1 presents a provider's legacy Instances (and, when not
// nil, Zones) interface as InstancesV2, so that Stratus' node controllers,
// which speak only InstancesV2, serve providers written before it existed.
// The answers are the ones upstream's node and node-lifecycle controllers
// derive from the same calls for such providers:
//
//   - a Node without spec.providerID gets "<providerName>://<InstanceID>",
//     as cloudprovider.GetInstanceProviderID builds it;
//   - InstanceExists asks InstanceExistsByProviderID; an InstanceID answer
//     of InstanceNotFound means the instance is gone;
//   - InstanceShutdown asks InstanceShutdownByProviderID; InstanceNotFound
//     from InstanceID and NotImplemented from the provider mean "not shut
//     down";
//   - InstanceMetadata asks for addresses, instance type and (with Zones)
//     zone by provider ID first and by node name when that fails. A
//     provider whose InstanceID is NotImplemented is asked by name only.
//
// Errors name the operation and keep the provider's error in the chain,
// so errors.Is(err, cloudprovider.InstanceNotFound) and RetryAfter work.
func InstancesV2FromV1(providerName string, in cloudprovider.Instances, zones cloudprovider.Zones) cloudprovider.InstancesV2 {
	return &v1Adapter{providerName: providerName, in: in, zones: zones}
}

type v1Adapter struct {
	providerName string
	in           cloudprovider.Instances
	zones        cloudprovider.Zones // nil when the provider has none
}

var _ cloudprovider.InstancesV2 = (*v1Adapter)(nil)

// providerID returns the Node's providerID, or builds it from the
// provider's InstanceID as upstream's GetInstanceProviderID does (plain
// concatenation: AWS's "/zone/i-x" becomes "aws:///zone/i-x").
func (a *v1Adapter) providerID(ctx context.Context, node *corev1.Node) (string, error) {
	if node.Spec.ProviderID != "" {
		return node.Spec.ProviderID, nil
	}
	id, err := a.in.InstanceID(ctx, types.NodeName(node.Name))
	if err != nil {
		return "", fmt.Errorf("instance ID of node %s: %w", node.Name, err)
	}
	return a.providerName + "://" + id, nil
}

func (a *v1Adapter) InstanceExists(ctx context.Context, node *corev1.Node) (bool, error) {
	id, err := a.providerID(ctx, node)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("instance exists: %w", err)
	}
	exists, err := a.in.InstanceExistsByProviderID(ctx, id)
	if err != nil {
		return false, fmt.Errorf("instance exists by provider ID %s: %w", id, err)
	}
	return exists, nil
}

func (a *v1Adapter) InstanceShutdown(ctx context.Context, node *corev1.Node) (bool, error) {
	id, err := a.providerID(ctx, node)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("instance shutdown: %w", err)
	}
	shutdown, err := a.in.InstanceShutdownByProviderID(ctx, id)
	if errors.Is(err, cloudprovider.NotImplemented) {
		// Such a provider cannot tell; the Node is simply never tainted
		// as shut down, as with upstream's controller.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("instance shutdown by provider ID %s: %w", id, err)
	}
	return shutdown, nil
}

func (a *v1Adapter) InstanceMetadata(ctx context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	providerID, err := a.providerID(ctx, node)
	if errors.Is(err, cloudprovider.NotImplemented) {
		// The one case upstream tolerates: a provider without instance
		// IDs is asked by node name, and the metadata has no providerID.
		providerID, err = "", nil
	}
	if err != nil {
		return nil, fmt.Errorf("instance metadata: %w", err)
	}
	name := types.NodeName(node.Name)
	addrs, err := byIDOrName(ctx, "node addresses", providerID, name, a.in.NodeAddressesByProviderID, a.in.NodeAddresses)
	if err != nil {
		return nil, err
	}
	instanceType, err := byIDOrName(ctx, "instance type", providerID, name, a.in.InstanceTypeByProviderID, a.in.InstanceType)
	if err != nil {
		return nil, err
	}
	md := &cloudprovider.InstanceMetadata{ProviderID: providerID, InstanceType: instanceType, NodeAddresses: addrs}
	if a.zones == nil {
		return md, nil
	}
	zone, err := byIDOrName(ctx, "zone", providerID, name, a.zones.GetZoneByProviderID, a.zones.GetZoneByNodeName)
	if err != nil {
		return nil, err
	}
	md.Zone, md.Region = zone.FailureDomain, zone.Region
	return md, nil
}

// byIDOrName asks by provider ID, then by node name when that fails, as
// upstream's controller does. With no provider ID it asks by name only: a
// lookup by "" would cost a rate-limited call that cannot succeed. Both
// errors stay in the chain.
func byIDOrName[T any](ctx context.Context, what, providerID string, name types.NodeName,
	byID func(context.Context, string) (T, error), byName func(context.Context, types.NodeName) (T, error)) (T, error) {
	var idErr error
	if providerID != "" {
		v, err := byID(ctx, providerID)
		if err == nil {
			return v, nil
		}
		idErr = err
	}
	v, err := byName(ctx, name)
	if err == nil {
		return v, nil
	}
	var zero T
	if idErr != nil {
		return zero, fmt.Errorf("%s of node %s: by provider ID %s: %w; by node name: %w", what, name, providerID, idErr, err)
	}
	return zero, fmt.Errorf("%s of node %s by node name: %w", what, name, err)
}
