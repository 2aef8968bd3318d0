package cloud

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/observe"
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
func (c *Cloud) LoadBalancerLister() (LoadBalancerLister, bool) {
	if l, ok := c.provider.(LoadBalancerLister); ok {
		return &lbLister{c: c, l: l}, true
	}
	if lb, ok := c.provider.LoadBalancer(); ok {
		if l, ok := lb.(LoadBalancerLister); ok {
			return &lbLister{c: c, l: l}, true
		}
	}
	return nil, false
}

// AnnotationChecker returns the provider's annotation checker, when its
// LoadBalancer has one. It makes no cloud call, so it is not instrumented.
func (c *Cloud) AnnotationChecker() (AnnotationChecker, bool) {
	if lb, ok := c.provider.LoadBalancer(); ok && lb != nil {
		if a, ok := lb.(AnnotationChecker); ok {
			return a, true
		}
	}
	return nil, false
}

type loadBalancer struct {
	c  *Cloud
	lb cloudprovider.LoadBalancer
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
	if w.c.observer != nil {
		return w.observeEnsure(ctx, "EnsureLoadBalancer", cluster, svc, nodes)
	}
	return call(ctx, w.c, "EnsureLoadBalancer", func(ctx context.Context) (*corev1.LoadBalancerStatus, error) {
		return w.lb.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	})
}

func (w *loadBalancer) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	if w.c.observer != nil {
		_, err := w.observeEnsure(ctx, "UpdateLoadBalancer", cluster, svc, nodes)
		return err
	}
	return call0(ctx, w.c, "UpdateLoadBalancer", func(ctx context.Context) error {
		return w.lb.UpdateLoadBalancer(ctx, cluster, svc, nodes)
	})
}

func (w *loadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	if w.c.observer != nil {
		return w.observeDelete(ctx, cluster, svc)
	}
	return call0(ctx, w.c, "EnsureLoadBalancerDeleted", func(ctx context.Context) error {
		return w.lb.EnsureLoadBalancerDeleted(ctx, cluster, svc)
	})
}

type lbLister struct {
	c *Cloud
	l LoadBalancerLister
}

func (w *lbLister) ListLoadBalancers(ctx context.Context, cluster string) ([]LoadBalancer, error) {
	return call(ctx, w.c, "ListLoadBalancers", func(ctx context.Context) ([]LoadBalancer, error) {
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
	c *Cloud
	r cloudprovider.Routes
}

func (w *routes) ListRoutes(ctx context.Context, cluster string) ([]*cloudprovider.Route, error) {
	return call(ctx, w.c, "ListRoutes", func(ctx context.Context) ([]*cloudprovider.Route, error) {
		return w.r.ListRoutes(ctx, cluster)
	})
}

func (w *routes) CreateRoute(ctx context.Context, cluster, nameHint string, route *cloudprovider.Route) error {
	if w.c.observer != nil {
		return w.c.refuse(ctx, "CreateRoute", routeChange(observe.ActionCreate, route))
	}
	return call0(ctx, w.c, "CreateRoute", func(ctx context.Context) error {
		return w.r.CreateRoute(ctx, cluster, nameHint, route)
	})
}

func (w *routes) DeleteRoute(ctx context.Context, cluster string, route *cloudprovider.Route) error {
	if w.c.observer != nil {
		return w.c.refuse(ctx, "DeleteRoute", routeChange(observe.ActionDelete, route))
	}
	return call0(ctx, w.c, "DeleteRoute", func(ctx context.Context) error {
		return w.r.DeleteRoute(ctx, cluster, route)
	})
}
