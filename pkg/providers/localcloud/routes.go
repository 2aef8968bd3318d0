package localcloud

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

type routes struct {
	client         *lcclient.Client
	defaultCluster string
	names          *nameIndex
}

// ListRoutes returns the cluster's routes; routes to terminated instances
// are reported as blackholes so the route controller replaces them.
func (r *routes) ListRoutes(ctx context.Context, clusterName string) (_ []*cloudprovider.Route, err error) {
	defer markThrottled(&err)
	cluster := clusterOr(clusterName, r.defaultCluster)
	items, err := r.client.ListRoutes(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("localcloud: list routes: %w", err)
	}
	out := make([]*cloudprovider.Route, 0, len(items))
	for _, it := range items {
		out = append(out, &cloudprovider.Route{
			Name:            it.Name,
			TargetNode:      types.NodeName(it.InstanceName),
			DestinationCIDR: it.DestinationCIDR,
			Blackhole:       it.State == api.RouteBlackhole,
		})
	}
	return out, nil
}

// routeName derives a stable name from the cluster and the hint (the node
// UID upstream passes), so a retried create hits the same name.
func routeName(cluster, hint string) string {
	n := cluster + "-" + hint
	if len(n) > api.MaxNameLength {
		n = n[:api.MaxNameLength]
	}
	return n
}

// CreateRoute routes route.DestinationCIDR to the node's instance. A
// retry that finds its own route already there succeeds.
func (r *routes) CreateRoute(ctx context.Context, clusterName, nameHint string, route *cloudprovider.Route) (err error) {
	defer markThrottled(&err)
	cluster := clusterOr(clusterName, r.defaultCluster)
	id, ok, err := r.names.lookup(ctx, string(route.TargetNode))
	if err != nil {
		return fmt.Errorf("localcloud: create route for %s: %w", route.TargetNode, err)
	}
	if !ok {
		return fmt.Errorf("localcloud: create route for %s: %w", route.TargetNode, cloudprovider.InstanceNotFound)
	}
	req := api.CreateRouteRequest{Name: routeName(cluster, nameHint), DestinationCIDR: route.DestinationCIDR, InstanceID: id}
	_, err = r.client.CreateRoute(ctx, cluster, req)
	if errors.Is(err, lcclient.ErrConflict) && r.exists(ctx, cluster, req) {
		return nil
	}
	if err != nil {
		if !errors.Is(err, lcclient.ErrQuotaExceeded) {
			r.names.forget(string(route.TargetNode))
		}
		return fmt.Errorf("localcloud: create route %s -> %s: %w", route.DestinationCIDR, route.TargetNode, withQuota(err))
	}
	return nil
}

func (r *routes) exists(ctx context.Context, cluster string, want api.CreateRouteRequest) bool {
	items, err := r.client.ListRoutes(ctx, cluster)
	if err != nil {
		return false
	}
	for _, it := range items {
		if it.Name == want.Name && it.DestinationCIDR == want.DestinationCIDR && it.InstanceID == want.InstanceID {
			return true
		}
	}
	return false
}

// DeleteRoute removes a route by name; a route already gone is success.
func (r *routes) DeleteRoute(ctx context.Context, clusterName string, route *cloudprovider.Route) (err error) {
	defer markThrottled(&err)
	cluster := clusterOr(clusterName, r.defaultCluster)
	err = r.client.DeleteRoute(ctx, cluster, route.Name)
	if err != nil && !errors.Is(err, lcclient.ErrNotFound) {
		return fmt.Errorf("localcloud: delete route %s: %w", route.Name, err)
	}
	return nil
}
