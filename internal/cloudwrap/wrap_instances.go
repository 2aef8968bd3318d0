package cloudwrap

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// InstancesV2 returns the provider's InstancesV2, instrumented.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) {
	in, ok := c.provider.InstancesV2()
	if !ok || in == nil {
		return nil, false
	}
	return &instancesV2{c: c, in: in}, true
}

// InstancesV2OrAdapted returns what the node controllers need: the
// provider's InstancesV2, or, for a provider that implements only the
// legacy Instances (and perhaps Zones), InstancesV2FromV1 over their
// instrumented forms, so that each legacy call is still counted and
// rate-limited. It reports false when the provider has neither.
func (c *Cloud) InstancesV2OrAdapted() (cloudprovider.InstancesV2, bool) {
	if in, ok := c.InstancesV2(); ok {
		return in, true
	}
	in, ok := c.Instances()
	if !ok {
		return nil, false
	}
	var z cloudprovider.Zones
	if zones, ok := c.Zones(); ok {
		z = zones
	}
	return cloud.InstancesV2FromV1(c.ProviderName(), in, z), true
}

// InstanceLister returns the provider's list-all-instances extension,
// instrumented, when the provider implements it. The provider itself is
// asked first, then its InstancesV2, since either may carry it.
func (c *Cloud) InstanceLister() (cloud.InstanceLister, bool) {
	if l, ok := c.provider.(cloud.InstanceLister); ok {
		return &instanceLister{c: c, l: l}, true
	}
	if in, ok := c.provider.InstancesV2(); ok {
		if l, ok := in.(cloud.InstanceLister); ok {
			return &instanceLister{c: c, l: l}, true
		}
	}
	return nil, false
}

type instancesV2 struct {
	c  *Cloud
	in cloudprovider.InstancesV2
}

func (w *instancesV2) InstanceExists(ctx context.Context, node *corev1.Node) (bool, error) {
	return call(ctx, w.c, "InstanceExists", func(ctx context.Context) (bool, error) {
		return w.in.InstanceExists(ctx, node)
	})
}

func (w *instancesV2) InstanceShutdown(ctx context.Context, node *corev1.Node) (bool, error) {
	return call(ctx, w.c, "InstanceShutdown", func(ctx context.Context) (bool, error) {
		return w.in.InstanceShutdown(ctx, node)
	})
}

func (w *instancesV2) InstanceMetadata(ctx context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	return call(ctx, w.c, "InstanceMetadata", func(ctx context.Context) (*cloudprovider.InstanceMetadata, error) {
		return w.in.InstanceMetadata(ctx, node)
	})
}

type instanceLister struct {
	c *Cloud
	l cloud.InstanceLister
}

func (w *instanceLister) ListInstances(ctx context.Context) ([]cloud.Instance, error) {
	return call(ctx, w.c, "ListInstances", w.l.ListInstances)
}

// Instances returns the provider's legacy Instances interface, instrumented.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) {
	in, ok := c.provider.Instances()
	if !ok || in == nil {
		return nil, false
	}
	return &instances{c: c, in: in}, true
}

type instances struct {
	c     *Cloud
	in    cloudprovider.Instances
	fence *Fence // set by Fenced; nil is open
}

func (w *instances) NodeAddresses(ctx context.Context, name types.NodeName) ([]corev1.NodeAddress, error) {
	return call(ctx, w.c, "NodeAddresses", func(ctx context.Context) ([]corev1.NodeAddress, error) {
		return w.in.NodeAddresses(ctx, name)
	})
}

func (w *instances) NodeAddressesByProviderID(ctx context.Context, id string) ([]corev1.NodeAddress, error) {
	return call(ctx, w.c, "NodeAddressesByProviderID", func(ctx context.Context) ([]corev1.NodeAddress, error) {
		return w.in.NodeAddressesByProviderID(ctx, id)
	})
}

func (w *instances) InstanceID(ctx context.Context, name types.NodeName) (string, error) {
	return call(ctx, w.c, "InstanceID", func(ctx context.Context) (string, error) {
		return w.in.InstanceID(ctx, name)
	})
}

func (w *instances) InstanceType(ctx context.Context, name types.NodeName) (string, error) {
	return call(ctx, w.c, "InstanceType", func(ctx context.Context) (string, error) {
		return w.in.InstanceType(ctx, name)
	})
}

func (w *instances) InstanceTypeByProviderID(ctx context.Context, id string) (string, error) {
	return call(ctx, w.c, "InstanceTypeByProviderID", func(ctx context.Context) (string, error) {
		return w.in.InstanceTypeByProviderID(ctx, id)
	})
}

func (w *instances) AddSSHKeyToAllInstances(ctx context.Context, user string, key []byte) error {
	return call0(ctx, w.c, "AddSSHKeyToAllInstances", fenced0(w.fence, func(ctx context.Context) error {
		return w.in.AddSSHKeyToAllInstances(ctx, user, key)
	}))
}

func (w *instances) CurrentNodeName(ctx context.Context, hostname string) (types.NodeName, error) {
	return call(ctx, w.c, "CurrentNodeName", func(ctx context.Context) (types.NodeName, error) {
		return w.in.CurrentNodeName(ctx, hostname)
	})
}

func (w *instances) InstanceExistsByProviderID(ctx context.Context, id string) (bool, error) {
	return call(ctx, w.c, "InstanceExistsByProviderID", func(ctx context.Context) (bool, error) {
		return w.in.InstanceExistsByProviderID(ctx, id)
	})
}

func (w *instances) InstanceShutdownByProviderID(ctx context.Context, id string) (bool, error) {
	return call(ctx, w.c, "InstanceShutdownByProviderID", func(ctx context.Context) (bool, error) {
		return w.in.InstanceShutdownByProviderID(ctx, id)
	})
}

// Zones returns the provider's deprecated Zones interface, instrumented.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) {
	z, ok := c.provider.Zones()
	if !ok || z == nil {
		return nil, false
	}
	return &zones{c: c, z: z}, true
}

type zones struct {
	c *Cloud
	z cloudprovider.Zones
}

func (w *zones) GetZone(ctx context.Context) (cloudprovider.Zone, error) {
	return call(ctx, w.c, "GetZone", w.z.GetZone)
}

func (w *zones) GetZoneByProviderID(ctx context.Context, id string) (cloudprovider.Zone, error) {
	return call(ctx, w.c, "GetZoneByProviderID", func(ctx context.Context) (cloudprovider.Zone, error) {
		return w.z.GetZoneByProviderID(ctx, id)
	})
}

func (w *zones) GetZoneByNodeName(ctx context.Context, name types.NodeName) (cloudprovider.Zone, error) {
	return call(ctx, w.c, "GetZoneByNodeName", func(ctx context.Context) (cloudprovider.Zone, error) {
		return w.z.GetZoneByNodeName(ctx, name)
	})
}
