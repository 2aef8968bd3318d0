package cloudwrap

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// LoadBalancer returns the provider's LoadBalancer, instrumented.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := c.provider.LoadBalancer()
	if !ok || lb == nil {
		return nil, false
	}
	return &loadBalancer{c: c, lb: lb}, true
}

// LoadBalancerLister returns the provider's list-owned-load-balancers
// extension, instrumented, when the provider (or its LoadBalancer) has it.
func (c *Cloud) LoadBalancerLister() (cloud.LoadBalancerLister, bool) {
	if l, ok := c.provider.(cloud.LoadBalancerLister); ok {
		return &lbLister{c: c, l: l}, true
	}
	if lb, ok := c.provider.LoadBalancer(); ok {
		if l, ok := lb.(cloud.LoadBalancerLister); ok {
			return &lbLister{c: c, l: l}, true
		}
	}
	return nil, false
}

// AnnotationChecker returns the provider's annotation checker, when its
// LoadBalancer has one. It makes no cloud call, so it is not instrumented.
func (c *Cloud) AnnotationChecker() (cloud.AnnotationChecker, bool) {
	if lb, ok := c.provider.LoadBalancer(); ok && lb != nil {
		if a, ok := lb.(cloud.AnnotationChecker); ok {
			return a, true
		}
	}
	return nil, false
}

// IPFamilyLister returns the provider's list of the IP families its load
// balancers serve, when its LoadBalancer has one. It makes no cloud call.
func (c *Cloud) IPFamilyLister() (cloud.IPFamilyLister, bool) {
	if lb, ok := c.provider.LoadBalancer(); ok && lb != nil {
		if f, ok := lb.(cloud.IPFamilyLister); ok {
			return f, true
		}
	}
	return nil, false
}

// LoadBalancerPlanner returns the provider's planner (on its LoadBalancer
// or on the provider itself), instrumented, when it has one.
func (c *Cloud) LoadBalancerPlanner() (cloud.LoadBalancerPlanner, bool) {
	var p cloud.LoadBalancerPlanner
	if lb, ok := c.provider.LoadBalancer(); ok && lb != nil {
		p, _ = lb.(cloud.LoadBalancerPlanner)
	}
	if p == nil {
		p, _ = c.provider.(cloud.LoadBalancerPlanner)
	}
	if p == nil {
		return nil, false
	}
	return &planner{c: c, p: p}, true
}

type planner struct {
	c *Cloud
	p cloud.LoadBalancerPlanner
}

func (w *planner) PlanLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) ([]string, error) {
	return call(ctx, w.c, "PlanLoadBalancer", func(ctx context.Context) ([]string, error) {
		return w.p.PlanLoadBalancer(ctx, cluster, svc, nodes)
	})
}

type loadBalancer struct {
	c     *Cloud
	lb    cloudprovider.LoadBalancer
	fence *Fence // set by Fenced; nil is open
}

func (w *loadBalancer) GetLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	type res struct {
		st     *corev1.LoadBalancerStatus
		exists bool
	}
	r, err := call(ctx, w.c, "GetLoadBalancer", func(ctx context.Context) (res, error) {
		st, exists, err := w.lb.GetLoadBalancer(ctx, cluster, svc)
		return res{st, exists}, err
	})
	return r.st, r.exists, err
}

// GetLoadBalancerName is a pure function of the Service in every known
// provider, so it is neither counted nor rate-limited.
func (w *loadBalancer) GetLoadBalancerName(ctx context.Context, cluster string, svc *corev1.Service) string {
	return w.lb.GetLoadBalancerName(ctx, cluster, svc)
}

func (w *loadBalancer) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	return call(ctx, w.c, "EnsureLoadBalancer", fenced(w.fence, func(ctx context.Context) (*corev1.LoadBalancerStatus, error) {
		return w.lb.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	}))
}

func (w *loadBalancer) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	return call0(ctx, w.c, "UpdateLoadBalancer", fenced0(w.fence, func(ctx context.Context) error {
		return w.lb.UpdateLoadBalancer(ctx, cluster, svc, nodes)
	}))
}

func (w *loadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	return call0(ctx, w.c, "EnsureLoadBalancerDeleted", fenced0(w.fence, func(ctx context.Context) error {
		return w.lb.EnsureLoadBalancerDeleted(ctx, cluster, svc)
	}))
}

type lbLister struct {
	c *Cloud
	l cloud.LoadBalancerLister
}

func (w *lbLister) ListLoadBalancers(ctx context.Context, cluster string) ([]cloud.LoadBalancer, error) {
	return call(ctx, w.c, "ListLoadBalancers", func(ctx context.Context) ([]cloud.LoadBalancer, error) {
		return w.l.ListLoadBalancers(ctx, cluster)
	})
}

// Routes returns the provider's Routes, instrumented.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	r, ok := c.provider.Routes()
	if !ok || r == nil {
		return nil, false
	}
	return &routes{c: c, r: r}, true
}

type routes struct {
	c     *Cloud
	r     cloudprovider.Routes
	fence *Fence // set by Fenced; nil is open
}

func (w *routes) ListRoutes(ctx context.Context, cluster string) ([]*cloudprovider.Route, error) {
	return call(ctx, w.c, "ListRoutes", func(ctx context.Context) ([]*cloudprovider.Route, error) {
		return w.r.ListRoutes(ctx, cluster)
	})
}

func (w *routes) CreateRoute(ctx context.Context, cluster, nameHint string, route *cloudprovider.Route) error {
	return call0(ctx, w.c, "CreateRoute", fenced0(w.fence, func(ctx context.Context) error {
		return w.r.CreateRoute(ctx, cluster, nameHint, route)
	}))
}

func (w *routes) DeleteRoute(ctx context.Context, cluster string, route *cloudprovider.Route) error {
	return call0(ctx, w.c, "DeleteRoute", fenced0(w.fence, func(ctx context.Context) error {
		return w.r.DeleteRoute(ctx, cluster, route)
	}))
}
