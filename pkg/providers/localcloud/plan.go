package localcloud

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

var _ cloud.LoadBalancerPlanner = (*loadBalancers)(nil)
var _ cloud.EndpointPlanner = (*loadBalancers)(nil)

// PlanLoadBalancer says what EnsureLoadBalancer would change, with reads
// only: the same desired spec, compared by specChanges as specEqual does.
func (l *loadBalancers) PlanLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) ([]string, error) {
	spec, _, err := l.desired(svc, nodes)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	lb, err := l.lookup(ctx, clusterOr(clusterName, l.defaultCluster), svc)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	switch {
	case lb == nil:
		return []string{"load balancer created"}, nil
	case lb.Status == api.LBDeleting:
		return []string{"load balancer being deleted: created again once gone"}, nil
	}
	if added, _ := setDiff(lb.Backends, spec.Backends); len(added) > 0 {
		// EnsureLoadBalancer skips the backends whose instance is gone
		// (withLiveBackends): plan the same, or a Node whose machine was
		// just terminated is planned as a backend no write would add.
		exists, err := l.liveInstances(ctx)
		if err != nil {
			return nil, svcErr(svc, err)
		}
		spec.Backends = slices.DeleteFunc(spec.Backends, func(id string) bool { return !exists[id] })
	}
	return specChanges(lb.LoadBalancerSpec, spec), nil
}

// PlanLoadBalancerEndpoints says what EnsureLoadBalancerEndpoints would
// change, with reads only, for observe mode: the endpoints added and
// removed per listener (with their conditions), and any other setting.
// It implements cloud.EndpointPlanner (cloud.LoadBalancerPlanner's plans
// are of node targets).
func (l *loadBalancers) PlanLoadBalancerEndpoints(ctx context.Context, clusterName string, svc *corev1.Service, endpoints cloud.EndpointSet) ([]string, error) {
	if endpoints == nil {
		endpoints = cloud.EndpointSet{}
	}
	spec, _, err := l.desiredTargets(svc, nil, endpoints)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	lb, err := l.lookup(ctx, clusterOr(clusterName, l.defaultCluster), svc)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	switch {
	case lb == nil:
		return []string{"load balancer created"}, nil
	case lb.Status == api.LBDeleting:
		return []string{"load balancer being deleted: created again once gone"}, nil
	}
	return specChanges(lb.LoadBalancerSpec, spec), nil
}

// specChanges lists what differs from have to want, as "field: old → new":
// the one comparison of specs, so that what a plan shows and what a sync
// writes (specEqual) cannot drift apart. Backends and source ranges are
// compared without their order, which is the cloud's, not a change.
func specChanges(have, want api.LoadBalancerSpec) []string {
	var out []string
	if !slices.Equal(listenerHeads(have.Listeners), listenerHeads(want.Listeners)) {
		out = append(out, fmt.Sprintf("listeners: %v → %v", listenerHeads(have.Listeners), listenerHeads(want.Listeners)))
	}
	if targetsOf(have) != targetsOf(want) {
		out = append(out, fmt.Sprintf("targets: %s → %s", targetsOf(have), targetsOf(want)))
	}
	out = append(out, endpointChanges(have.Listeners, want.Listeners)...)
	if added, removed := setDiff(have.Backends, want.Backends); len(added)+len(removed) > 0 {
		out = append(out, fmt.Sprintf("backends: +[%s] -[%s]", strings.Join(added, ","), strings.Join(removed, ",")))
	}
	if added, removed := setDiff(have.SourceRanges, want.SourceRanges); len(added)+len(removed) > 0 {
		out = append(out, fmt.Sprintf("sourceRanges: +[%s] -[%s]", strings.Join(added, ","), strings.Join(removed, ",")))
	}
	if have.HealthCheck != want.HealthCheck {
		out = append(out, fmt.Sprintf("healthCheck: %+v → %+v", have.HealthCheck, want.HealthCheck))
	}
	if have.SessionAffinity != want.SessionAffinity {
		out = append(out, fmt.Sprintf("sessionAffinity: %q → %q", have.SessionAffinity, want.SessionAffinity))
	}
	if have.UDPIdleTimeoutMs != want.UDPIdleTimeoutMs {
		out = append(out, fmt.Sprintf("udpIdleTimeoutMs: %d → %d", have.UDPIdleTimeoutMs, want.UDPIdleTimeoutMs))
	}
	if have.ProxyProtocol != want.ProxyProtocol {
		out = append(out, fmt.Sprintf("proxyProtocol: %q → %q", have.ProxyProtocol, want.ProxyProtocol))
	}
	if have.Proxy != want.Proxy {
		out = append(out, fmt.Sprintf("proxy: %t → %t", have.Proxy, want.Proxy))
	}
	if !slices.Equal(have.Families(), want.Families()) {
		out = append(out, fmt.Sprintf("ipFamilies: %v → %v", have.Families(), want.Families()))
	}
	return out
}

// listenerHeads are the listeners without their endpoints, which
// endpointChanges compares on their own.
func listenerHeads(ls []api.Listener) []listenerHead {
	out := make([]listenerHead, len(ls))
	for i, l := range ls {
		out[i] = listenerHead{l.Protocol, l.Port, l.NodePort}
	}
	return out
}

// listenerHead is a listener without its endpoints; it prints as the
// listeners did before they had endpoints.
type listenerHead struct {
	Protocol api.Protocol
	Port     int
	NodePort int
}

// targetsOf is the spec's kind of targets, instances when unset.
func targetsOf(s api.LoadBalancerSpec) api.Targets {
	if s.Targets == "" {
		return api.TargetsInstances
	}
	return s.Targets
}

// endpointChanges lists, per listener (protocol and port), the endpoints
// added and removed, conditions included, without their order: a
// rolling update reads as the pods that came and went.
func endpointChanges(have, want []api.Listener) []string {
	type key struct {
		proto api.Protocol
		port  int
	}
	eps := map[key][2][]string{}
	var keys []key
	for side, ls := range [][]api.Listener{have, want} {
		for _, l := range ls {
			k := key{l.Protocol, l.Port}
			cur, seen := eps[k]
			if !seen {
				keys = append(keys, k)
			}
			for _, e := range l.Endpoints {
				cur[side] = append(cur[side], endpointString(e))
			}
			eps[k] = cur
		}
	}
	var out []string
	for _, k := range keys {
		if added, removed := setDiff(eps[k][0], eps[k][1]); len(added)+len(removed) > 0 {
			out = append(out, fmt.Sprintf("endpoints %s/%d: +[%s] -[%s]", k.proto, k.port, strings.Join(added, ","), strings.Join(removed, ",")))
		}
	}
	return out
}

// endpointString is an endpoint with the conditions that decide its
// traffic, so that a change of conditions is a change.
func endpointString(e api.Endpoint) string {
	s := e.AddrPort()
	switch {
	case e.Ready:
		s += " ready"
	case e.Serving:
		s += " serving"
	default:
		s += " not-serving"
	}
	if e.Terminating {
		s += " terminating"
	}
	return s
}

// setDiff returns what want has that have lacks and the reverse, sorted,
// counting repeats: ["a","a"] against ["a"] is a change, as a write of it
// would be.
func setDiff(have, want []string) (added, removed []string) {
	h, w := slices.Clone(have), slices.Clone(want)
	slices.Sort(h)
	slices.Sort(w)
	for len(h) > 0 || len(w) > 0 {
		switch {
		case len(w) == 0 || (len(h) > 0 && h[0] < w[0]):
			removed, h = append(removed, h[0]), h[1:]
		case len(h) == 0 || w[0] < h[0]:
			added, w = append(added, w[0]), w[1:]
		default:
			h, w = h[1:], w[1:]
		}
	}
	return added, removed
}
