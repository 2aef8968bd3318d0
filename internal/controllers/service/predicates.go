package service

import (
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

// ToBeDeletedTaint is the taint the cluster autoscaler puts on a node it is
// about to remove; such a node leaves every load balancer's node set.
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// wantsLoadBalancer reports whether this controller should provide a load
// balancer for svc: type LoadBalancer and a loadBalancerClass that is unset
// or equal to the class this controller serves.
func wantsLoadBalancer(svc *corev1.Service, class string) bool {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return false
	}
	c := svc.Spec.LoadBalancerClass
	return c == nil || (class != "" && *c == class)
}

// ownedClass reports whether svc's loadBalancerClass (if any) is ours. A
// Service of another class is never touched, not even its finalizer: the
// finalizer name is shared by every implementation.
func ownedClass(svc *corev1.Service, class string) bool {
	c := svc.Spec.LoadBalancerClass
	return c == nil || (class != "" && *c == class)
}

// needsCleanup reports whether svc carries the cleanup finalizer but no
// longer wants a load balancer: it is being deleted or its type changed.
func needsCleanup(svc *corev1.Service, class string) bool {
	if !servicehelper.HasLBFinalizer(svc) || !ownedClass(svc, class) {
		return false
	}
	return svc.DeletionTimestamp != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer
}

// needsUpdate reports whether the change from old to cur matters to the
// load balancer, with upstream's list of fields (plus the full IP family
// list rather than only its length, and the IP family policy).
func needsUpdate(old, cur *corev1.Service, class string) bool {
	wantOld, wantCur := wantsLoadBalancer(old, class), wantsLoadBalancer(cur, class)
	if !wantOld && !wantCur {
		return false
	}
	if wantOld != wantCur || old.UID != cur.UID {
		return true
	}
	return !lbConfigEqual(old, cur)
}

// lbConfigEqual compares every Service field a load balancer is built from.
func lbConfigEqual(a, b *corev1.Service) bool {
	as, bs := &a.Spec, &b.Spec
	return slices.Equal(as.LoadBalancerSourceRanges, bs.LoadBalancerSourceRanges) &&
		portsEqual(as.Ports, bs.Ports) &&
		as.SessionAffinity == bs.SessionAffinity &&
		equality.Semantic.DeepEqual(as.SessionAffinityConfig, bs.SessionAffinityConfig) &&
		as.LoadBalancerIP == bs.LoadBalancerIP &&
		slices.Equal(as.ExternalIPs, bs.ExternalIPs) &&
		maps.Equal(a.Annotations, b.Annotations) &&
		as.ExternalTrafficPolicy == bs.ExternalTrafficPolicy &&
		as.HealthCheckNodePort == bs.HealthCheckNodePort &&
		slices.Equal(as.IPFamilies, bs.IPFamilies) &&
		// With node ports allocated or not, the targets may change
		// (endpoints.go).
		equality.Semantic.DeepEqual(as.AllocateLoadBalancerNodePorts, bs.AllocateLoadBalancerNodePorts) &&
		// The policy alone decides whether a family the cloud lacks may be
		// let go (families.go), so a change of it is a change.
		policyOf(a) == policyOf(b)
}

func portsEqual(a, b []corev1.ServicePort) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.ServicePort) bool {
		return x.Name == y.Name && x.Protocol == y.Protocol && x.Port == y.Port &&
			x.NodePort == y.NodePort && x.TargetPort == y.TargetPort &&
			equality.Semantic.DeepEqual(x.AppProtocol, y.AppProtocol)
	})
}

// serviceEventMatters decides whether a Service update is worth a sync.
// Changes to the finalizer or status alone (our own writes) are not, so a
// sync waiting on a RetryError delay is not re-run early by its own patch.
func serviceEventMatters(old, cur *corev1.Service, class string) bool {
	return needsUpdate(old, cur, class) || needsCleanup(cur, class) ||
		(wantsLoadBalancer(cur, class) && !servicehelper.HasLBFinalizer(cur) && servicehelper.HasLBFinalizer(old))
}

// nodeIncluded is false for a node labelled for exclusion. As upstream, any
// value that does not parse as a boolean excludes the node: the label's
// presence states an intent.
func nodeIncluded(n *corev1.Node) bool {
	v, ok := n.Labels[corev1.LabelNodeExcludeBalancers]
	if !ok {
		return true
	}
	exclude, err := strconv.ParseBool(v)
	return err == nil && !exclude
}

// nodeUntainted is false for a node the cluster autoscaler is removing.
func nodeUntainted(n *corev1.Node) bool {
	return !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == ToBeDeletedTaint })
}

func nodeNotDeleted(n *corev1.Node) bool { return n.DeletionTimestamp.IsZero() }

// nodeEligible is upstream's stable node set predicate: readiness is not a
// criterion (KEP-3458), so a flapping kubelet never churns load balancers;
// the cloud's own health checks take unhealthy nodes out of rotation.
func nodeEligible(n *corev1.Node) bool {
	return nodeNotDeleted(n) && nodeIncluded(n) && nodeUntainted(n)
}

// nodeChangeTriggersSync is upstream's shouldSyncUpdatedNode: only a change
// of the exclusion label or of the providerID starts a pass over the load
// balancers. Adding the autoscaler taint deliberately does not, so that
// connections drain while the node is emptied; the node leaves the set at
// the next pass, at the latest when it is deleted. The end of a node's
// initialization does too, for a legacy provider that sets no providerID:
// a node's registration does not start a pass (see nodeHandler).
func nodeChangeTriggersSync(old, cur *corev1.Node) bool {
	return nodeIncluded(old) != nodeIncluded(cur) || old.Spec.ProviderID != cur.Spec.ProviderID ||
		nodeUninitialized(old) != nodeUninitialized(cur)
}

// nodeUninitialized reports whether a node still waits for the cloud node
// controller: it carries the cloud provider's uninitialized taint.
func nodeUninitialized(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == cloudproviderapi.TaintExternalCloudProvider
	})
}

// statusEqual compares load balancer statuses including ipMode and ports.
func statusEqual(a, b *corev1.LoadBalancerStatus) bool {
	return servicehelper.LoadBalancerStatusEqual(a, b)
}
