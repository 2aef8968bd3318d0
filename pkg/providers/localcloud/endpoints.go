package localcloud

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

var _ cloud.EndpointTargeter = (*loadBalancers)(nil)

// EndpointTargets implements cloud.EndpointTargeter. Whether localcloud's
// load balancers reach pod addresses depends on how it serves (a
// data-plane namespace that follows its route table does; proxies on the
// machine's loopback do not), which the API does not tell: the provider
// config says so (endpointTargets: true).
func (l *loadBalancers) EndpointTargets(svc *corev1.Service) (bool, string) {
	if !l.endpointTargets {
		return false, "this localcloud's load balancers do not reach pod addresses " +
			"(endpointTargets is not set in the provider's cloud config; it needs localcloud serving with --dataplane-netns, " +
			"whose namespace follows the cloud's route table)"
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != corev1.ProtocolTCP && p.Protocol != corev1.ProtocolUDP {
			return false, fmt.Sprintf("port %q (%d/%s): localcloud's load balancers carry TCP and UDP only", p.Name, p.Port, p.Protocol)
		}
	}
	return true, ""
}

// EnsureLoadBalancerEndpoints implements cloud.EndpointTargeter: the spec
// EnsureLoadBalancer writes (the same annotations, families, VIP, source
// ranges, affinity, PROXY protocol and health check settings), with each
// listener's endpoints instead of backends, written only when it differs
// from the load balancer's. A load balancer of node targets moves to
// endpoint targets in place; the cloud keeps its VIPs.
func (l *loadBalancers) EnsureLoadBalancerEndpoints(ctx context.Context, clusterName string, svc *corev1.Service, endpoints cloud.EndpointSet) (_ *corev1.LoadBalancerStatus, err error) {
	defer markThrottled(&err)
	cluster := clusterOr(clusterName, l.defaultCluster)
	if endpoints == nil {
		// nil tells node targets from endpoint targets below; a Service
		// without endpoints yet is a load balancer without targets.
		endpoints = cloud.EndpointSet{}
	}
	spec, mode, err := l.desiredTargets(svc, nil, endpoints)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	lb, err := l.createOrUpdate(ctx, cluster, svc, spec, nil)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	return ensured(lb, mode)
}

// withEndpoints makes spec a load balancer of endpoint targets: each
// listener gets the endpoints of its Service port (by name) of the
// families the load balancer has a VIP of, sorted by address then port,
// once each; the health check is a TCP connect to each endpoint, whatever
// port kube-proxy's health checks would have used.
func withEndpoints(spec *api.LoadBalancerSpec, svc *corev1.Service, set cloud.EndpointSet) error {
	spec.Targets = api.TargetsEndpoints
	spec.Backends = nil
	spec.HealthCheck.Port, spec.HealthCheck.Path = 0, ""
	total := 0
	for i, p := range svc.Spec.Ports {
		var eps []api.Endpoint
		seen := map[netip.AddrPort]bool{}
		for _, e := range set[p.Name] {
			a, err := netip.ParseAddr(e.Address)
			if err != nil || a.Zone() != "" {
				return fmt.Errorf("port %q: endpoint address %q is not an IP address", p.Name, e.Address)
			}
			a = a.Unmap()
			fam := api.IPv4
			if a.Is6() {
				fam = api.IPv6
			}
			ap := netip.AddrPortFrom(a, uint16(e.Port))
			if !spec.Has(fam) || seen[ap] {
				continue
			}
			if e.Port < 1 || e.Port > 65535 {
				return fmt.Errorf("port %q: endpoint %s has port %d, not 1-65535", p.Name, a, e.Port)
			}
			seen[ap] = true
			eps = append(eps, api.Endpoint{Address: a.String(), Port: int(e.Port), Ready: e.Ready, Serving: e.Serving, Terminating: e.Terminating})
		}
		slices.SortFunc(eps, func(x, y api.Endpoint) int {
			if c := netip.MustParseAddr(x.Address).Compare(netip.MustParseAddr(y.Address)); c != 0 {
				return c
			}
			return x.Port - y.Port
		})
		total += len(eps)
		spec.Listeners[i].Endpoints = eps
	}
	if total > api.MaxEndpoints {
		return fmt.Errorf("%d endpoints, all ports together: localcloud's load balancers take at most %d", total, api.MaxEndpoints)
	}
	return nil
}

// endpointList is what cloud.LoadBalancer.Endpoints reports of lb: every
// listener's endpoints as "address:port", sorted, once each; never nil,
// so that a load balancer without endpoints reads as such, not unknown.
func endpointList(lb *api.LoadBalancer) []string {
	out := []string{}
	for _, l := range lb.Listeners {
		for _, e := range l.Endpoints {
			out = append(out, e.AddrPort())
		}
	}
	slices.SortFunc(out, strings.Compare)
	return slices.Compact(out)
}
