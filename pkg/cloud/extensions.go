package cloud

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// Instance is what the cloud knows of one machine, as a single list call
// returns it. Controllers match it to a Node by ProviderID, or by Name when
// the Node has no providerID yet.
type Instance struct {
	// ProviderID is the node's spec.providerID for this machine,
	// e.g. "localcloud://i-0123".
	ProviderID string
	// Name is the node name a kubelet on this machine registers under.
	Name string
	// Shutdown is true when the machine exists but is stopped.
	Shutdown bool
	// Metadata is what InstancesV2.InstanceMetadata would return for it.
	Metadata cloudprovider.InstanceMetadata
}

// InstanceLister is an optional extension: a provider that can list every
// instance's metadata in one call lets the node controllers replace one
// call per node with one call per batch or refresh period.
//
// ListInstances returns every instance that exists (terminated ones are
// omitted: an instance absent from a successful answer is gone). It must
// return an error, never a partial list, when the cloud cannot answer fully.
type InstanceLister interface {
	ListInstances(ctx context.Context) ([]Instance, error)
}

// LoadBalancer describes one load balancer a cluster owns, as the cloud's
// tags record it.
type LoadBalancer struct {
	// Name is the cloud's name for the load balancer.
	Name string
	// ServiceNamespace, ServiceName and ServiceUID identify the Service the
	// load balancer was made for.
	ServiceNamespace string
	ServiceName      string
	ServiceUID       types.UID
	// Backends are the providerIDs of the nodes the load balancer sends
	// traffic to, when the provider reports them; nil means unknown, and
	// the service controller then checks only that the load balancer
	// exists. Callers only read it, so a provider may share one slice
	// between load balancers with the same backends (localcloud's does:
	// with thousands of nodes, a copy per load balancer is the bulk of a
	// listing).
	Backends []string
	// Endpoints are the "address:port" pairs of a load balancer that
	// targets endpoints (EndpointTargeter), sorted, when the provider
	// reports them; nil for one that targets nodes, or when unknown.
	Endpoints []string
}

// LoadBalancerLister is an optional extension: a provider that can list the
// load balancers a cluster owns lets the service controller find orphans
// (load balancers whose Service no longer exists). An orphan is deleted with
// the standard LoadBalancer.EnsureLoadBalancerDeleted, given a Service built
// from the namespace, name and UID recorded here.
type LoadBalancerLister interface {
	ListLoadBalancers(ctx context.Context, clusterName string) ([]LoadBalancer, error)
}

// AnnotationChecker is an optional extension of a provider's LoadBalancer:
// it names the Service annotations under the provider's own prefix that
// the provider does not read, with the ones it does, so that the service
// controller can warn about a misspelt annotation instead of letting it be
// ignored in silence. It makes no cloud call.
type AnnotationChecker interface {
	UnknownAnnotations(svc *corev1.Service) (unknown, known []string)
}

// ThrottleClassifier is an optional extension for a provider whose
// throttling errors neither wrap ErrThrottled nor carry an HTTP 429 status:
// IsThrottle reports whether err, returned by one of its calls, means the
// cloud throttled the caller.
type ThrottleClassifier interface {
	IsThrottle(err error) bool
}

// ThrottleReporter is an optional extension for a provider whose client
// retries throttled requests itself (as many cloud SDKs do): the wrapper
// would see only the throttled answers that exhausted the retries, so it
// hands the provider f to call on every throttled answer, with the cloud's
// Retry-After (0 if none). f is safe for concurrent use.
type ThrottleReporter interface {
	ReportThrottlesTo(f func(retryAfter time.Duration))
}

// RequestPacer is an optional extension for a provider whose calls send
// several requests to the cloud (a creation and its polls) or whose client
// retries throttled requests itself, as many cloud SDKs do. The wrapper
// then paces the provider's requests, which is what the cloud counts,
// rather than its calls: it hands the provider gate, and the provider's
// client calls it before each request it sends (the first, every retry,
// every poll) with the context of the call the request serves, and calls
// the done it returns with the answer. Calls themselves then do not wait.
// A provider that implements it needs no ThrottleReporter.
type RequestPacer interface {
	PaceRequestsWith(gate RequestGate)
}

// RequestGate blocks until a request may go, or ctx ends. The returned
// done hears whether the cloud throttled the request and the Retry-After
// it gave (0 if none). It is safe for concurrent use.
type RequestGate func(ctx context.Context) (done func(throttled bool, retryAfter time.Duration), err error)

// OperationClassifier is an optional extension for a provider whose cloud
// limits operations separately (for instance reads and writes): calls of
// different classes are paced independently, so throttled writes do not
// slow reads. OperationClass maps the wrapper's operation name (the method
// name, e.g. "EnsureLoadBalancer", "InstanceMetadata", "ListInstances") to
// a class; ReadWriteClass is a ready-made mapping. Without it every call is
// in one class.
type OperationClassifier interface {
	OperationClass(operation string) string
}

// Operation classes of ReadWriteClass; ClassAll is the class of every call
// when the provider declares none.
const (
	ClassAll   = "all"
	ClassRead  = "read"
	ClassWrite = "write"
)

// ReadWriteClass classes an operation as a write when it changes the cloud
// (Ensure*, Update*, Create*, Delete*) and as a read otherwise.
func ReadWriteClass(operation string) string {
	for _, p := range []string{"Ensure", "Update", "Create", "Delete"} {
		if strings.HasPrefix(operation, p) {
			return ClassWrite
		}
	}
	return ClassRead
}

// RecoveryNotifier tells controllers when the cloud answers again after an
// outage, so that objects whose sync failed during it are retried at once
// instead of waiting out a backoff that grew while the cloud was down.
type RecoveryNotifier interface {
	// OnRecovered registers fn, called once per recovery, on the goroutine
	// of the call that succeeded: fn must not block.
	OnRecovered(fn func())
}

// LoadBalancerPlanner is an optional extension that makes observe mode
// exact for load balancers: PlanLoadBalancer answers what EnsureLoadBalancer
// (or UpdateLoadBalancer) would change for an existing load balancer,
// without changing it, as human-readable "what: old → new" lines; none when
// it is in sync. Without it, observe mode reports every ensure of an
// existing load balancer as a possible update, since only the provider
// knows how a Service maps onto its load balancers.
type LoadBalancerPlanner interface {
	PlanLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) ([]string, error)
}

// IPFamilyLister is an optional extension of a provider's LoadBalancer: it
// names the IP families its load balancers can serve (corev1.IPv4Protocol,
// corev1.IPv6Protocol). With it the service controller decides each
// Service's families before any cloud call, from spec.ipFamilies and
// spec.ipFamilyPolicy:
//
//   - a family the cloud cannot serve, asked for by a SingleStack or a
//     RequireDualStack Service, is refused (ErrIPFamilyNotSupported, the
//     LoadBalancerServing condition and an event), with no load balancer
//     made or changed;
//   - a PreferDualStack Service gets the families the cloud serves, and is
//     told which it does not get;
//   - the provider is handed the Service with spec.ipFamilies cut down to
//     the families it serves, so it never sees one it declared it cannot.
//
// The controller then checks that the status has one ingress IP per
// family served. Without the extension the provider gets every Service
// as it is, as upstream's controller hands it over; so it does when the
// list is empty. An unknown family, or one listed twice, stops the
// controller from starting, with the value named. It makes no cloud call.
type IPFamilyLister interface {
	LoadBalancerIPFamilies() []corev1.IPFamily
}
