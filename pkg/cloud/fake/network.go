package fake

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// GetLoadBalancerName is upstream's default name; it makes no call.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

func lbKey(cluster, name string) string { return cluster + "/" + name }

// GetLoadBalancer returns the Service's load balancer's status.
func (c *Cloud) GetLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	if err := c.enter(ctx, "GetLoadBalancer", svc.Namespace+"/"+svc.Name); err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.balancers[lbKey(cluster, c.GetLoadBalancerName(ctx, cluster, svc))]
	if !ok {
		return nil, false, nil
	}
	st := b.Status
	return &st, true, nil
}

// EnsureLoadBalancer creates or updates the Service's load balancer; a new
// one gets the next address of 192.0.2.0/24 (documentation range, never
// routed).
func (c *Cloud) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	if err := c.enter(ctx, "EnsureLoadBalancer", svc.Namespace+"/"+svc.Name); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.balancers == nil {
		c.balancers = map[string]*Balancer{}
	}
	name := c.GetLoadBalancerName(ctx, cluster, svc)
	b, ok := c.balancers[lbKey(cluster, name)]
	if !ok {
		c.nextIP++
		b = &Balancer{Cluster: cluster, Name: name, Status: corev1.LoadBalancerStatus{
			Ingress: []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("192.0.2.%d", c.nextIP%254+1)}}}}
		c.balancers[lbKey(cluster, name)] = b
	}
	b.Service = types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	b.UID = svc.UID
	b.Ports = append([]corev1.ServicePort(nil), svc.Spec.Ports...)
	b.Hosts = nodeNames(nodes)
	st := b.Status
	return &st, nil
}

// UpdateLoadBalancer sets the load balancer's hosts; it fails when the
// load balancer does not exist, as a cloud's would.
func (c *Cloud) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	if err := c.enter(ctx, "UpdateLoadBalancer", svc.Namespace+"/"+svc.Name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.balancers[lbKey(cluster, c.GetLoadBalancerName(ctx, cluster, svc))]
	if !ok {
		return fmt.Errorf("fake UpdateLoadBalancer: service %s/%s has no load balancer", svc.Namespace, svc.Name)
	}
	b.Hosts = nodeNames(nodes)
	return nil
}

// EnsureLoadBalancerDeleted deletes the Service's load balancer, if any.
func (c *Cloud) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	if err := c.enter(ctx, "EnsureLoadBalancerDeleted", svc.Namespace+"/"+svc.Name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.balancers, lbKey(cluster, c.GetLoadBalancerName(ctx, cluster, svc)))
	return nil
}

// ListLoadBalancers lists the cluster's load balancers, sorted by name.
func (c *Cloud) ListLoadBalancers(ctx context.Context, cluster string) ([]cloud.LoadBalancer, error) {
	if err := c.enter(ctx, "ListLoadBalancers"); err != nil {
		return nil, err
	}
	var out []cloud.LoadBalancer
	for _, b := range c.Balancers() {
		if b.Cluster == cluster {
			out = append(out, cloud.LoadBalancer{Name: b.Name, ServiceNamespace: b.Service.Namespace,
				ServiceName: b.Service.Name, ServiceUID: b.UID})
		}
	}
	return out, nil
}

// Balancers returns copies of every load balancer held, sorted by cluster
// and name.
func (c *Cloud) Balancers() []Balancer {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.balancers))
	for k := range c.balancers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Balancer, 0, len(keys))
	for _, k := range keys {
		out = append(out, *c.balancers[k])
	}
	return out
}

func nodeNames(nodes []*corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

// ListRoutes lists the cluster's routes, sorted by name.
func (c *Cloud) ListRoutes(ctx context.Context, cluster string) ([]*cloudprovider.Route, error) {
	if err := c.enter(ctx, "ListRoutes"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.routes))
	for k := range c.routes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
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
	if err := c.enter(ctx, "CreateRoute", route.DestinationCIDR); err != nil {
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
	if err := c.enter(ctx, "DeleteRoute", route.DestinationCIDR); err != nil {
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
