package localcloud

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// listPageSize is the page size of full listings: large, so that a
// thousand-node cluster costs one call per refresh.
const listPageSize = api.MaxPageSize

type instances struct {
	client *lcclient.Client
}

// ProviderID returns the providerID of an instance id.
func ProviderID(instanceID string) string { return ProviderIDPrefix + instanceID }

// ParseProviderID returns the instance id of a localcloud providerID.
func ParseProviderID(providerID string) (string, error) {
	id, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok {
		return "", fmt.Errorf("localcloud: providerID %q does not start with %s", providerID, ProviderIDPrefix)
	}
	if err := api.ValidID("providerID", "i", id); err != nil {
		return "", fmt.Errorf("localcloud: providerID %q: %w", providerID, err)
	}
	return id, nil
}

func notFound(what string) error {
	return fmt.Errorf("localcloud: instance %s: %w", what, cloudprovider.InstanceNotFound)
}

// find returns the node's instance: by providerID when the node has one,
// else by node name (before the node controller has set the providerID).
// A terminated instance counts as gone.
func (i *instances) find(ctx context.Context, node *corev1.Node) (*api.Instance, error) {
	if node.Spec.ProviderID != "" {
		id, err := ParseProviderID(node.Spec.ProviderID)
		if err != nil {
			return nil, err
		}
		inst, err := i.client.GetInstance(ctx, id)
		if errors.Is(err, lcclient.ErrNotFound) {
			return nil, notFound(id)
		}
		if err != nil {
			return nil, err
		}
		if inst.State == api.InstanceTerminated {
			return nil, notFound(id + " (terminated)")
		}
		return inst, nil
	}
	page, err := i.client.ListInstances(ctx, lcclient.ListOptions{Name: node.Name, MaxResults: 1})
	if err != nil {
		return nil, err
	}
	if len(page.Items) == 0 {
		return nil, notFound("named " + node.Name)
	}
	return &page.Items[0], nil
}

// InstanceExists reports false only when the cloud says the instance is
// gone; a failed call is an error, never "gone".
func (i *instances) InstanceExists(ctx context.Context, node *corev1.Node) (_ bool, err error) {
	defer markThrottled(&err)
	_, err = i.find(ctx, node)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err // the client names the request, the caller the node
	}
	return true, nil
}

// InstanceShutdown reports whether the instance is stopped.
func (i *instances) InstanceShutdown(ctx context.Context, node *corev1.Node) (_ bool, err error) {
	defer markThrottled(&err)
	inst, err := i.find(ctx, node)
	if err != nil {
		return false, err // the client names the request, the caller the node
	}
	return inst.State == api.InstanceStopped, nil
}

// InstanceMetadata returns providerID, type, addresses, zone and region.
func (i *instances) InstanceMetadata(ctx context.Context, node *corev1.Node) (_ *cloudprovider.InstanceMetadata, err error) {
	defer markThrottled(&err)
	inst, err := i.find(ctx, node)
	if err != nil {
		return nil, err // the client names the request, the caller the node
	}
	md := metadata(inst)
	return &md, nil
}

func metadata(inst *api.Instance) cloudprovider.InstanceMetadata {
	addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: inst.Addresses.Internal}}
	if inst.Addresses.Internal6 != "" {
		// A dual-stack machine: both InternalIPs, IPv4 first (the
		// kubelet's --node-ip order picks the primary).
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: inst.Addresses.Internal6})
	}
	if inst.Addresses.External != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: inst.Addresses.External})
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: inst.Addresses.Hostname})
	return cloudprovider.InstanceMetadata{
		ProviderID:    ProviderID(inst.ID),
		InstanceType:  inst.Type,
		NodeAddresses: addrs,
		Zone:          inst.Zone,
		Region:        inst.Region,
	}
}

// ListInstances implements cloud.InstanceLister: every live instance, one
// call per page of listPageSize. Any failed page fails the whole list.
func (c *Cloud) ListInstances(ctx context.Context) (_ []cloud.Instance, err error) {
	defer markThrottled(&err)
	all, err := c.client.ListAllInstances(ctx, lcclient.ListOptions{MaxResults: listPageSize})
	if err != nil {
		return nil, err // the client's error says all this layer knows
	}
	out := make([]cloud.Instance, 0, len(all))
	for idx := range all {
		inst := &all[idx]
		out = append(out, cloud.Instance{
			ProviderID: ProviderID(inst.ID),
			Name:       inst.Name,
			Shutdown:   inst.State == api.InstanceStopped,
			Metadata:   metadata(inst),
		})
	}
	return out, nil
}

// ListLoadBalancers implements cloud.LoadBalancerLister: the load
// balancers tagged with the cluster, except those already being deleted.
// Each is decoded as it arrives and its backends interned (see
// backendSets), so the listing is never held whole: at 5,000 nodes and 300
// load balancers, the whole answer and its copy with providerIDs took
// over 150 MB for a moment every orphan pass.
func (c *Cloud) ListLoadBalancers(ctx context.Context, clusterName string) (_ []cloud.LoadBalancer, err error) {
	defer markThrottled(&err)
	cluster := clusterOr(clusterName, c.clusterName)
	var out []cloud.LoadBalancer
	sets := newBackendSets()
	err = c.client.EachLoadBalancer(ctx, lcclient.ListOptions{Cluster: cluster, MaxResults: listPageSize}, func(lb *api.LoadBalancer) error {
		if lb.Status == api.LBDeleting {
			return nil
		}
		l := cloud.LoadBalancer{
			Name:             lb.Name,
			ServiceNamespace: lb.Tags[api.TagServiceNamespace],
			ServiceName:      lb.Tags[api.TagServiceName],
			ServiceUID:       types.UID(lb.Tags[api.TagServiceUID]),
		}
		// A load balancer whose targets are endpoints has no nodes to
		// report: its Backends stay unknown (nil), its Endpoints are set.
		if lb.EndpointTargets() {
			l.Endpoints = endpointList(lb)
		} else {
			l.Backends = sets.providerIDs(lb.Backends)
		}
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, err // the client's error says all this layer knows
	}
	return out, nil
}
