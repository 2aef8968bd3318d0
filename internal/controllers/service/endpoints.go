package service

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Endpoint targets (cloud.EndpointTargeter): load balancers whose targets
// are a Service's endpoints, from its EndpointSlices, instead of nodes.

// ReasonEndpointTargetsNotSupported is Stratus' own: the Service needs
// endpoint targets (a port without a node port) or asks for them
// (cloud.AnnotationLoadBalancerTargets), and the provider cannot give
// them. With the extension, a provider that says no for a Service that
// needs them refuses it: no load balancer is made. Without the extension,
// the Service gets node targets through EnsureLoadBalancer, as upstream's
// controller hands it over, and is told so.
const ReasonEndpointTargetsNotSupported = "EndpointTargetsNotSupported"

// ReasonInvalidAnnotation is Stratus' own: an annotation of Stratus' has a
// value it does not know; the default applies.
const ReasonInvalidAnnotation = "InvalidAnnotation"

// errEndpointTargetsNotSupported is what a refused Service's sync error
// wraps, for the Serving condition's reason.
var errEndpointTargetsNotSupported = errors.New("the cloud provider cannot target this Service's endpoints")

// targets is what a load balancer sends traffic to.
type targets uint8

const (
	targetNodes targets = iota
	targetEndpoints
)

// targetChoice is a Service's targets and, when it gets node targets
// although it needs or asks for endpoints, why.
type targetChoice struct {
	targets  targets
	fallback string
}

// chooseTargets decides a Service's targets. A Service with a port
// without a node port (spec.allocateLoadBalancerNodePorts false) needs
// endpoint targets; one annotated with cloud.AnnotationLoadBalancerTargets
// "endpoints" asks for them. It returns an error wrapping
// errEndpointTargetsNotSupported when the Service needs them and the
// provider's extension says it cannot give them.
func (c *Controller) chooseTargets(svc *corev1.Service) (targetChoice, error) {
	needs := slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.NodePort == 0 })
	asks := false
	switch v, ok := svc.Annotations[cloud.AnnotationLoadBalancerTargets]; {
	case !ok:
		asks = c.cfg.EndpointTargetsByDefault
	case v == cloud.TargetsNodes:
	case v == cloud.TargetsEndpoints:
		asks = true
	default:
		c.event(svc, corev1.EventTypeWarning, ReasonInvalidAnnotation, actionEnsure,
			"annotation %s: value %q is neither %q nor %q; the load balancer targets %s",
			cloud.AnnotationLoadBalancerTargets, v, cloud.TargetsNodes, cloud.TargetsEndpoints, defaultTargetsWord(needs))
	}
	if !needs && !asks {
		return targetChoice{targets: targetNodes}, nil
	}
	why := "the cloud provider does not implement endpoint targets"
	if c.endpoints != nil {
		ok, reason := c.endpoints.EndpointTargets(svc)
		if ok {
			return targetChoice{targets: targetEndpoints}, nil
		}
		why = "the cloud provider cannot target this Service's endpoints"
		if reason != "" {
			why += ": " + reason
		}
		if needs {
			return targetChoice{}, fmt.Errorf("%s, and ports %s have no node port (spec.allocateLoadBalancerNodePorts is false): %w",
				why, portsWithoutNodePort(svc), errEndpointTargetsNotSupported)
		}
	}
	return targetChoice{targets: targetNodes, fallback: why}, nil
}

func defaultTargetsWord(needs bool) string {
	if needs {
		return "endpoints"
	}
	return "nodes"
}

// portsWithoutNodePort names the Service's ports that have no node port.
func portsWithoutNodePort(svc *corev1.Service) string {
	var out []string
	for _, p := range svc.Spec.Ports {
		if p.NodePort == 0 {
			out = append(out, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	return strings.Join(out, ", ")
}

// desiredEndpoints reads the Service's EndpointSlices from the cache and
// merges them into the set handed to the provider: per Service port name,
// the endpoints that can serve (serving, or ready where serving is
// unset), of the families served, one per address and port, sorted. A
// serving-but-terminating endpoint stays, marked so (KEP-1672).
func (c *Controller) desiredEndpoints(ctx context.Context, svc *corev1.Service, families []corev1.IPFamily) (cloud.EndpointSet, error) {
	var list discoveryv1.EndpointSliceList
	if err := c.client.List(ctx, &list, client.InNamespace(svc.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return nil, fmt.Errorf("list EndpointSlices of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return endpointSetOf(svc, list.Items, families), nil
}

// endpointSetOf is desiredEndpoints' merge, on slices already read;
// families nil keeps every family.
func endpointSetOf(svc *corev1.Service, list []discoveryv1.EndpointSlice, families []corev1.IPFamily) cloud.EndpointSet {
	m := newEndpointMerge(svc)
	for i := range list {
		s := &list[i]
		fam, ok := sliceFamily(s.AddressType)
		if !ok || (families != nil && !slices.Contains(families, fam)) {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if port, ok := slicePort(s.Ports, sp); ok {
				for _, e := range s.Endpoints {
					if ep, ok := endpointOf(e, port, fam); ok {
						m.add(sp.Name, ep)
					}
				}
			}
		}
	}
	return m.sorted()
}

// endpointMerge gathers a set, one entry per port name, address and
// port.
type endpointMerge struct {
	set  cloud.EndpointSet
	seen map[endpointAt]int // index in set[port name]
}

type endpointAt struct {
	port string
	addr string
	num  int32
}

func newEndpointMerge(svc *corev1.Service) *endpointMerge {
	m := &endpointMerge{set: make(cloud.EndpointSet, len(svc.Spec.Ports)), seen: map[endpointAt]int{}}
	for _, sp := range svc.Spec.Ports {
		m.set[sp.Name] = []cloud.Endpoint{}
	}
	return m
}

func (m *endpointMerge) add(port string, ep cloud.Endpoint) {
	k := endpointAt{port, ep.Address, ep.Port}
	if j, dup := m.seen[k]; dup {
		// One endpoint in two slices (a slice being replaced): the
		// readier entry wins.
		if ep.Ready && !m.set[port][j].Ready {
			m.set[port][j] = ep
		}
		return
	}
	m.seen[k] = len(m.set[port])
	m.set[port] = append(m.set[port], ep)
}

func (m *endpointMerge) sorted() cloud.EndpointSet {
	for name := range m.set {
		slices.SortFunc(m.set[name], func(a, b cloud.Endpoint) int {
			if c := strings.Compare(a.Address, b.Address); c != 0 {
				return c
			}
			return int(a.Port) - int(b.Port)
		})
	}
	return m.set
}

func sliceFamily(t discoveryv1.AddressType) (corev1.IPFamily, bool) {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		return corev1.IPv4Protocol, true
	case discoveryv1.AddressTypeIPv6:
		return corev1.IPv6Protocol, true
	case discoveryv1.AddressTypeFQDN:
		// Not an address a load balancer can target.
	}
	return "", false
}

// slicePort finds the slice's port for a Service port: same name and
// protocol, as kube-proxy matches them.
func slicePort(ports []discoveryv1.EndpointPort, sp corev1.ServicePort) (int32, bool) {
	for _, p := range ports {
		name, proto := "", corev1.ProtocolTCP
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if name == sp.Name && proto == sp.Protocol && p.Port != nil && *p.Port > 0 {
			return *p.Port, true
		}
	}
	return 0, false
}

// endpointOf is one slice entry as a target, false when it cannot serve
// or its address is not one of the slice's family (the API server does
// not check it for slices written by hand).
func endpointOf(e discoveryv1.Endpoint, port int32, fam corev1.IPFamily) (cloud.Endpoint, bool) {
	if len(e.Addresses) == 0 {
		return cloud.Endpoint{}, false
	}
	// Only the first address counts (the API's rule for IP slices).
	a, err := netip.ParseAddr(e.Addresses[0])
	if err != nil || a.Zone() != "" || a.Is4In6() || a.Is6() != (fam == corev1.IPv6Protocol) {
		return cloud.Endpoint{}, false
	}
	ready := e.Conditions.Ready == nil || *e.Conditions.Ready
	serving := ready
	if e.Conditions.Serving != nil {
		serving = *e.Conditions.Serving
	}
	terminating := e.Conditions.Terminating != nil && *e.Conditions.Terminating
	if !serving {
		return cloud.Endpoint{}, false
	}
	ep := cloud.Endpoint{Address: a.String(), Port: port, Ready: ready && !terminating, Serving: serving, Terminating: terminating}
	if e.NodeName != nil {
		ep.NodeName = *e.NodeName
	}
	if e.Zone != nil {
		ep.Zone = *e.Zone
	}
	return ep, true
}

// endpointSetsEqual compares two sets entry by entry (both are sorted).
func endpointSetsEqual(a, b cloud.EndpointSet) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// endpointCount counts a set's endpoints, for logs and events.
func endpointCount(set cloud.EndpointSet) int {
	n := 0
	for _, eps := range set {
		n += len(eps)
	}
	return n
}

// sliceService is the Service an EndpointSlice belongs to; false for one
// without the label (not managed for a Service).
func sliceService(s *discoveryv1.EndpointSlice) (types.NamespacedName, bool) {
	name := s.Labels[discoveryv1.LabelServiceName]
	return types.NamespacedName{Namespace: s.Namespace, Name: name}, name != ""
}

// sliceChangeMatters is false for an update that leaves what a load
// balancer is built from alone (the slice's labels or annotations).
func sliceChangeMatters(old, cur *discoveryv1.EndpointSlice) bool {
	return old.AddressType != cur.AddressType || !equality.Semantic.DeepEqual(old.Ports, cur.Ports) ||
		!equality.Semantic.DeepEqual(old.Endpoints, cur.Endpoints) || old.Labels[discoveryv1.LabelServiceName] != cur.Labels[discoveryv1.LabelServiceName]
}
