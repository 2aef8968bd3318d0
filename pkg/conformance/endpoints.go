package conformance

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// endpointChecks test cloud.EndpointTargeter, beside the other load
// balancer checks.
func endpointChecks() []check {
	return []check{
		{
			name: "EndpointTargets",
			why: "the service controller hands a Service's endpoints to EnsureLoadBalancerEndpoints after every change of its EndpointSlices and on every resync, and takes the load balancer to serve exactly them: " +
				"endpoints ensured but not served send clients to pods that are gone (or none to new ones), a second call with the same set that writes again turns every resync into a cloud write, " +
				"and a load balancer ListLoadBalancers reports with other endpoints than it serves cannot be checked.",
			needs: (*suite).needEndpointTargets,
			test:  testEndpointTargets,
			cleanup: func(ctx context.Context, s *suite) error {
				_, err := retrying(ctx, s.deleteLB(s.endpointService()))
				return err
			},
		},
	}
}

func (s *suite) endpointTargeter() cloud.EndpointTargeter {
	et, _ := s.lb.(cloud.EndpointTargeter)
	return et
}

func (s *suite) needEndpointTargets() string {
	if reason := s.needLB(); reason != "" {
		return reason
	}
	et := s.endpointTargeter()
	if et == nil {
		return "the provider's LoadBalancer does not implement cloud.EndpointTargeter"
	}
	if ok, why := et.EndpointTargets(s.endpointService()); !ok {
		return "the provider cannot target the endpoints of a Service: " + why
	}
	return ""
}

// endpointService is the Service the endpoint check ensures: the
// configured one without node ports (allocateLoadBalancerNodePorts
// false, the Services that target endpoints without asking), of the
// provider's first declared family.
func (s *suite) endpointService() *corev1.Service {
	svc := s.otherService(s.cfg.Service.Name+"-endpoints", string(s.cfg.Service.UID)+"-endpoints")
	svc.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].NodePort = 0
	}
	if s.endpointFamily() == corev1.IPv6Protocol {
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	}
	return svc
}

func (s *suite) endpointFamily() corev1.IPFamily {
	if len(s.families) > 0 && !slices.Contains(s.families, corev1.IPv4Protocol) {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// endpointSet gives every port of svc the endpoints at the documentation
// addresses numbered hosts (192.0.2.N or 2001:db8::N), on port 8080; the
// first is ready, the others serving and terminating.
func (s *suite) endpointSet(svc *corev1.Service, hosts ...int) cloud.EndpointSet {
	set := cloud.EndpointSet{}
	for _, p := range svc.Spec.Ports {
		eps := []cloud.Endpoint{}
		for i, h := range hosts {
			addr := "192.0.2." + strconv.Itoa(h)
			if s.endpointFamily() == corev1.IPv6Protocol {
				addr = fmt.Sprintf("2001:db8::%x", h)
			}
			eps = append(eps, cloud.Endpoint{Address: addr, Port: 8080, Ready: i == 0, Serving: true, Terminating: i != 0})
		}
		set[p.Name] = eps
	}
	return set
}

func (s *suite) ensureEndpoints(svc *corev1.Service, set cloud.EndpointSet) func(context.Context) (*corev1.LoadBalancerStatus, error) {
	return func(ctx context.Context) (*corev1.LoadBalancerStatus, error) {
		return s.endpointTargeter().EnsureLoadBalancerEndpoints(ctx, s.cfg.ClusterName, svc.DeepCopy(), set)
	}
}

func testEndpointTargets(ctx context.Context, s *suite) error {
	svc := s.endpointService()
	set := s.endpointSet(svc, 10, 11)
	first, err := retrying(ctx, s.ensureEndpoints(svc, set))
	if err != nil {
		return fmt.Errorf("EnsureLoadBalancerEndpoints: %w", err)
	}
	// Whether the ingress is valid is EnsureReturnsIngress' business (the
	// status is made alike); here it must be there.
	if first == nil || len(first.Ingress) == 0 {
		return fmt.Errorf("EnsureLoadBalancerEndpoints succeeded with no ingress: %+v", first)
	}
	if err := s.listsEndpoints(ctx, svc, set); err != nil {
		return err
	}
	changedAt, err := s.lastChange(ctx, svc)
	if err != nil {
		return err
	}
	second, err := retrying(ctx, s.ensureEndpoints(svc, set))
	if err != nil {
		return fmt.Errorf("EnsureLoadBalancerEndpoints a second time with the same endpoints: %w", err)
	}
	if !reflect.DeepEqual(first, second) {
		return fmt.Errorf("EnsureLoadBalancerEndpoints answered %+v, then %+v for the same endpoints", first, second)
	}
	if again, err := s.lastChange(ctx, svc); err != nil {
		return err
	} else if again != changedAt {
		return fmt.Errorf("EnsureLoadBalancerEndpoints with the same endpoints changed the load balancer (ListModifications: %s, then %s)", changedAt, again)
	}
	if err := s.exactlyOneListed(ctx, svc); err != nil {
		return err
	}
	changed := s.endpointSet(svc, 12, 10)
	if _, err := retrying(ctx, s.ensureEndpoints(svc, changed)); err != nil {
		return fmt.Errorf("EnsureLoadBalancerEndpoints with changed endpoints: %w", err)
	}
	if err := s.listsEndpoints(ctx, svc, changed); err != nil {
		return err
	}
	if _, err := retrying(ctx, s.deleteLB(svc)); err != nil {
		return fmt.Errorf("EnsureLoadBalancerDeleted: %w", err)
	}
	_, exists, err := s.lb.GetLoadBalancer(ctx, s.cfg.ClusterName, svc.DeepCopy())
	if err != nil {
		return fmt.Errorf("GetLoadBalancer after EnsureLoadBalancerDeleted of an endpoint-target load balancer: %w", err)
	}
	if exists {
		return fmt.Errorf("GetLoadBalancer reports the endpoint-target load balancer of Service %s/%s after EnsureLoadBalancerDeleted", svc.Namespace, svc.Name)
	}
	return nil
}

// listsEndpoints checks, when the provider can list, that svc's load
// balancer reports exactly set's endpoints as "address:port", sorted.
func (s *suite) listsEndpoints(ctx context.Context, svc *corev1.Service, set cloud.EndpointSet) error {
	if s.lbLister == nil {
		return nil
	}
	var want []string
	for _, eps := range set {
		for _, e := range eps {
			want = append(want, net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))))
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	lbs, err := retrying(ctx, func(ctx context.Context) ([]cloud.LoadBalancer, error) {
		return s.lbLister.ListLoadBalancers(ctx, s.cfg.ClusterName)
	})
	if err != nil {
		return fmt.Errorf("ListLoadBalancers: %w", err)
	}
	for _, lb := range lbs {
		if lb.ServiceUID != svc.UID {
			continue
		}
		if !slices.Equal(lb.Endpoints, want) {
			return fmt.Errorf("ListLoadBalancers reports endpoints %q for the load balancer of Service %s/%s, ensured with %q", lb.Endpoints, svc.Namespace, svc.Name, want)
		}
		return nil
	}
	return fmt.Errorf("ListLoadBalancers shows no load balancer for Service %s/%s (UID %s) after EnsureLoadBalancerEndpoints", svc.Namespace, svc.Name, svc.UID)
}

// lastChange is when ListModifications says svc's load balancer last
// changed, and by whom; empty when the provider does not tell (a lister
// that omits it fails the modification checks, not this one).
func (s *suite) lastChange(ctx context.Context, svc *corev1.Service) (string, error) {
	if s.modifications() == nil {
		return "", nil
	}
	name, err := s.cloudNameOf(ctx, svc)
	if err != nil {
		return "", err
	}
	mods, err := s.listModifications(ctx, s.cfg.ClusterName)
	if err != nil {
		return "", err
	}
	for _, m := range mods {
		if m.Kind == cloud.KindLoadBalancer && m.Name == name {
			return m.At.String() + " by " + m.By, nil
		}
	}
	return "", nil
}
