package cloud

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationLoadBalancerTargets opts a Service with node ports into
// endpoint targets ("endpoints"); "nodes", or no annotation, keeps node
// targets. A Service with spec.allocateLoadBalancerNodePorts false has no
// node ports to target and gets endpoint targets without it.
const AnnotationLoadBalancerTargets = "service.stratus.io/load-balancer-targets"

// Values of AnnotationLoadBalancerTargets.
const (
	TargetsNodes     = "nodes"
	TargetsEndpoints = "endpoints"
)

// Endpoint is one target of a load balancer whose targets are endpoints:
// a pod's address and the port it serves one Service port on, with the
// conditions of its EndpointSlice entry.
type Endpoint struct {
	// Address is the pod's IP, of the family of the slice it came from.
	Address string
	// Port is the endpoint's port for this Service port (the target
	// port, resolved by the EndpointSlice controller, so named target
	// ports may differ between pods).
	Port int32
	// NodeName and Zone are where the endpoint runs, when known.
	NodeName string
	Zone     string
	// Ready, Serving and Terminating are the EndpointSlice conditions
	// (an unset Ready or Serving counts as true, as the API defines;
	// an unset Terminating as false). New connections go to ready
	// endpoints, and to serving-but-terminating ones only when none is
	// ready (KEP-1672); a provider keeps a terminating endpoint's existing
	// connections until it is no longer handed over.
	Ready       bool
	Serving     bool
	Terminating bool
}

// EndpointSet is a Service's endpoints per Service port, keyed by the
// port's name ("" for a Service's single unnamed port), each list sorted
// by address then port with one entry per address and port. A port
// with no endpoints has an empty list; a key absent from the set is a
// port the Service does not have.
type EndpointSet map[string][]Endpoint

// EndpointTargeter is an optional extension of a provider's LoadBalancer:
// load balancers whose targets are a Service's endpoints (pod addresses
// and target ports), as GKE's NEGs, AWS' IP targets and Azure's
// container-native backend pools have them, instead of nodes and node
// ports. The service controller hands it a Service's endpoints, from its
// EndpointSlices, when the Service targets endpoints (no node ports, or
// AnnotationLoadBalancerTargets), coalescing bursts of changes (a rolling
// update is a few calls, not one per pod); other Services, and every
// Service with a provider without the extension, get node targets
// through the standard LoadBalancer calls. A Service without node ports
// whose provider cannot target its endpoints is refused with the
// LoadBalancerServing condition (EndpointTargetsNotSupported) and an
// event, and nothing is made.
//
// The load balancer is deleted with the standard
// EnsureLoadBalancerDeleted, and GetLoadBalancer answers for it as for
// any other.
type EndpointTargeter interface {
	// EndpointTargets says whether the provider can make svc's load
	// balancer target its endpoints, and, when not, why, in words an
	// event can carry. It makes no cloud call.
	EndpointTargets(svc *corev1.Service) (ok bool, why string)
	// EnsureLoadBalancerEndpoints is EnsureLoadBalancer with endpoints
	// for targets: it creates or updates svc's load balancer so that each
	// Service port's traffic goes to that port's endpoints, and returns
	// its status. Called again with the same Service and set, it changes
	// nothing. A load balancer that targeted nodes is moved to endpoint
	// targets in place, keeping its VIPs.
	EnsureLoadBalancerEndpoints(ctx context.Context, clusterName string, svc *corev1.Service, endpoints EndpointSet) (*corev1.LoadBalancerStatus, error)
}

// EndpointPlanner is an optional extension of an EndpointTargeter that
// makes observe mode exact for endpoint targets, as LoadBalancerPlanner
// does for node targets: PlanLoadBalancerEndpoints answers what
// EnsureLoadBalancerEndpoints would change for an existing load balancer,
// without changing it, as human-readable "what: old → new" lines; none
// when it is in sync. Without it, observe mode plans an update of every
// existing endpoint-target load balancer it is asked to ensure.
type EndpointPlanner interface {
	PlanLoadBalancerEndpoints(ctx context.Context, clusterName string, svc *corev1.Service, endpoints EndpointSet) ([]string, error)
}
