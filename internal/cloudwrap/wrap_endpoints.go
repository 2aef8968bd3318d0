package cloudwrap

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// EndpointTargeter returns the provider's endpoint-target extension (on
// its LoadBalancer), instrumented, when it has one: EndpointTargets makes
// no cloud call and passes through; EnsureLoadBalancerEndpoints is counted,
// paced and, on a Fenced cloud, fenced like EnsureLoadBalancer.
func (c *Cloud) EndpointTargeter() (cloud.EndpointTargeter, bool) {
	return c.endpointTargeter(nil)
}

func (c *Cloud) endpointTargeter(f *Fence) (cloud.EndpointTargeter, bool) {
	lb, ok := c.provider.LoadBalancer()
	if !ok || lb == nil {
		return nil, false
	}
	t, ok := lb.(cloud.EndpointTargeter)
	if !ok {
		return nil, false
	}
	w := &endpointTargeter{c: c, t: t, fence: f}
	if p, ok := lb.(cloud.EndpointPlanner); ok {
		// Only then does the wrapper plan: callers find the extension
		// by a type assertion, as on the provider.
		return &endpointPlanner{endpointTargeter: w, p: p}, true
	}
	return w, true
}

// EndpointTargeter is the instrumented extension with its ensure fenced.
func (c *Fenced) EndpointTargeter() (cloud.EndpointTargeter, bool) {
	return c.endpointTargeter(c.fence)
}

type endpointTargeter struct {
	c     *Cloud
	t     cloud.EndpointTargeter
	fence *Fence // nil is open
}

func (w *endpointTargeter) EndpointTargets(svc *corev1.Service) (bool, string) {
	return w.t.EndpointTargets(svc)
}

func (w *endpointTargeter) EnsureLoadBalancerEndpoints(ctx context.Context, cluster string, svc *corev1.Service, eps cloud.EndpointSet) (*corev1.LoadBalancerStatus, error) {
	return call(ctx, w.c, "EnsureLoadBalancerEndpoints", fenced(w.fence, func(ctx context.Context) (*corev1.LoadBalancerStatus, error) {
		return w.t.EnsureLoadBalancerEndpoints(ctx, cluster, svc, eps)
	}))
}

type endpointPlanner struct {
	*endpointTargeter
	p cloud.EndpointPlanner
}

func (w *endpointPlanner) PlanLoadBalancerEndpoints(ctx context.Context, cluster string, svc *corev1.Service, eps cloud.EndpointSet) ([]string, error) {
	return call(ctx, w.c, "PlanLoadBalancerEndpoints", func(ctx context.Context) ([]string, error) {
		return w.p.PlanLoadBalancerEndpoints(ctx, cluster, svc, eps)
	})
}
