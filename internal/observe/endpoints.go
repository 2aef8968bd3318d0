package observe

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// EndpointTargeter returns the provider's endpoint-target extension with
// its ensure planned: without this, the extension would reach the provider
// past observe mode's LoadBalancer.
func (c *Cloud) EndpointTargeter() (cloud.EndpointTargeter, bool) {
	t, ok := c.Cloud.EndpointTargeter()
	if !ok {
		return nil, false
	}
	lb, ok := c.LoadBalancer()
	if !ok {
		return nil, false
	}
	return &endpointTargeter{EndpointTargeter: t, lb: lb.(*loadBalancer)}, true
}

type endpointTargeter struct {
	cloud.EndpointTargeter
	lb *loadBalancer
}

// EnsureLoadBalancerEndpoints is recorded as the creation of a load
// balancer with these endpoints, or, with the provider's EndpointPlanner,
// as the update it says it would make (none when in sync); without the
// planner, whether an existing load balancer already has them is not
// known, and an update is planned whatever it holds.
func (w *endpointTargeter) EnsureLoadBalancerEndpoints(ctx context.Context, cluster string, svc *corev1.Service, set cloud.EndpointSet) (*corev1.LoadBalancerStatus, error) {
	const op = "EnsureLoadBalancerEndpoints"
	ch := lbChange(w.lb.GetLoadBalancerName(ctx, cluster, svc), svc)
	st, exists, err := w.lb.GetLoadBalancer(ctx, cluster, svc)
	if err != nil {
		return nil, err
	}
	if !exists {
		ch.Action = ActionCreate
		ch.Diff = "ports " + ports(svc) + ", endpoints [" + endpointList(set) + "]"
		return nil, w.lb.c.refuse(ctx, op, ch)
	}
	ch.Action = ActionUpdate
	planner, ok := w.EndpointTargeter.(cloud.EndpointPlanner)
	if !ok {
		ch.Diff = "unknown: the provider cannot plan (no EndpointPlanner); endpoints [" + endpointList(set) + "]"
		return nil, w.lb.c.refuse(ctx, op, ch)
	}
	diff, err := planner.PlanLoadBalancerEndpoints(ctx, cluster, svc, set)
	if err != nil {
		return nil, err
	}
	if len(diff) == 0 {
		// In sync: answered as the provider would, so the controller
		// carries on as beside an up-to-date load balancer.
		return st, nil
	}
	ch.Diff = strings.Join(diff, "; ")
	return nil, w.lb.c.refuse(ctx, op, ch)
}

func endpointList(set cloud.EndpointSet) string {
	var out []string
	for name, eps := range set {
		for _, e := range eps {
			out = append(out, name+"="+net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
