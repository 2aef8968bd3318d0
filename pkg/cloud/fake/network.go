package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ListRoutes lists the cluster's routes, sorted by name.
func (c *Cloud) ListRoutes(ctx context.Context, cluster string) ([]*cloudprovider.Route, error) {
	if err := c.enter(ctx, Call{Op: "ListRoutes"}); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := slices.Sorted(maps.Keys(c.routes))
	var out []*cloudprovider.Route
	for _, k := range keys {
		if strings.HasPrefix(k, cluster+"/") {
			r := *c.routes[k]
			out = append(out, &r)
		}
	}
	return out, nil
}

// CreateRoute adds a route named "r-" + nameHint, as clouds that take the
// hint as the name do: a destination or a name already in the cluster's
// table, or a table at RouteQuota, is refused.
func (c *Cloud) CreateRoute(ctx context.Context, cluster, nameHint string, route *cloudprovider.Route) error {
	if err := c.enter(ctx, Call{Op: "CreateRoute", Object: route.DestinationCIDR}); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.routes == nil {
		c.routes = map[string]*cloudprovider.Route{}
	}
	r := *route
	r.Name = "r-" + nameHint
	n := 0
	for k, other := range c.routes {
		if !strings.HasPrefix(k, cluster+"/") {
			continue
		}
		n++
		if other.DestinationCIDR == r.DestinationCIDR {
			return fmt.Errorf("fake CreateRoute: a route to %s exists", r.DestinationCIDR)
		}
		if other.Name == r.Name {
			return fmt.Errorf("fake CreateRoute: route name %s is taken", r.Name)
		}
	}
	if c.RouteQuota > 0 && n >= c.RouteQuota {
		return fmt.Errorf("fake CreateRoute %s: %w: route table full (%d routes)", r.DestinationCIDR, cloud.ErrQuotaExceeded, c.RouteQuota)
	}
	c.routes[cluster+"/"+r.Name] = &r
	return nil
}

// PutRoute adds a route to the cluster's table as it is, as if another
// tool or an earlier run had made it.
func (c *Cloud) PutRoute(cluster string, route cloudprovider.Route) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.routes == nil {
		c.routes = map[string]*cloudprovider.Route{}
	}
	c.routes[cluster+"/"+route.Name] = &route
}

// HeldRoutes returns copies of the cluster's routes, sorted by name,
// without logging a call.
func (c *Cloud) HeldRoutes(cluster string) []cloudprovider.Route {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cloudprovider.Route
	for k, r := range c.routes {
		if strings.HasPrefix(k, cluster+"/") {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DeleteRoute removes the route (by name).
func (c *Cloud) DeleteRoute(ctx context.Context, cluster string, route *cloudprovider.Route) error {
	if err := c.enter(ctx, Call{Op: "DeleteRoute", Object: route.DestinationCIDR}); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.routes, cluster+"/"+route.Name)
	return nil
}

// Upstream returns c as a provider with only upstream's interfaces: none
// of Stratus' extensions is visible on it or on what its accessors return,
// as for a provider written for upstream alone.
func Upstream(c *Cloud) cloudprovider.Interface { return upstreamOnly{c: c} }

type upstreamOnly struct{ c *Cloud }

func (u upstreamOnly) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	u.c.Initialize(b, stop)
}
func (u upstreamOnly) ProviderName() string                     { return u.c.ProviderName() }
func (u upstreamOnly) HasClusterID() bool                       { return u.c.HasClusterID() }
func (u upstreamOnly) Clusters() (cloudprovider.Clusters, bool) { return nil, false }
func (u upstreamOnly) Zones() (cloudprovider.Zones, bool)       { return u.c.Zones() }
func (u upstreamOnly) Routes() (cloudprovider.Routes, bool)     { return u.c.Routes() }
func (u upstreamOnly) Instances() (cloudprovider.Instances, bool) {
	return u.c.Instances()
}

func (u upstreamOnly) InstancesV2() (cloudprovider.InstancesV2, bool) {
	in, ok := u.c.InstancesV2()
	if !ok {
		return nil, false
	}
	return struct{ cloudprovider.InstancesV2 }{in}, true
}

func (u upstreamOnly) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := u.c.LoadBalancer()
	if !ok {
		return nil, false
	}
	return struct{ cloudprovider.LoadBalancer }{lb}, true
}
