package fake

import (
	"context"
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// EndpointTargets implements cloud.EndpointTargeter: every Service's load
// balancer can target its endpoints unless RefuseEndpointTargets says why
// not.
func (c *Cloud) EndpointTargets(*corev1.Service) (bool, string) {
	if c.RefuseEndpointTargets != "" {
		return false, c.RefuseEndpointTargets
	}
	return true, ""
}

// EnsureLoadBalancerEndpoints implements cloud.EndpointTargeter as
// EnsureLoadBalancer does, with the set's endpoints for targets: the
// load balancer's Endpoints are the set's "address:port" pairs, its Hosts
// and Backends none. The call's Endpoints record them.
func (c *Cloud) EnsureLoadBalancerEndpoints(ctx context.Context, cluster string, svc *corev1.Service, set cloud.EndpointSet) (*corev1.LoadBalancerStatus, error) {
	eps := endpointStrings(set)
	if err := c.enter(ctx, Call{Op: "EnsureLoadBalancerEndpoints", Object: serviceOf(svc), Endpoints: eps}); err != nil {
		return nil, err
	}
	if err := c.refusedPort(svc); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.balancerLocked(ctx, cluster, svc)
	b.Hosts, b.Backends, b.Endpoints = nil, nil, eps
	st := *b.Status.DeepCopy()
	return &st, nil
}

// endpointStrings lists a set's endpoints as sorted, distinct
// "address:port" pairs.
func endpointStrings(set cloud.EndpointSet) []string {
	out := []string{}
	for _, eps := range set {
		for _, e := range eps {
			out = append(out, net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
