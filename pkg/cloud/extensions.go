package cloud

import (
	"context"

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
