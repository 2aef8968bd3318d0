package cloud

import cloudprovider "k8s.io/cloud-provider"

// Cloud is a provider as controllers see it: upstream's interface, each
// extension the provider implements behind an accessor that reports
// whether it does, and the recovery notice. The daemon hands controllers a
// Cloud whose every call is counted, timed and paced; what stands between
// a controller and the provider (observe mode among it) is not the
// controller's concern.
type Cloud interface {
	cloudprovider.Interface
	RecoveryNotifier
	// InstancesV2OrAdapted is the provider's InstancesV2 or, for a provider
	// with only the legacy Instances (and Zones), InstancesV2FromV1 over
	// them; false when it has neither.
	InstancesV2OrAdapted() (cloudprovider.InstancesV2, bool)
	// InstanceLister is the provider's list-all-instances extension.
	InstanceLister() (InstanceLister, bool)
	// LoadBalancerLister is the provider's list-owned-load-balancers
	// extension.
	LoadBalancerLister() (LoadBalancerLister, bool)
	// LoadBalancerPlanner is the provider's what-would-change extension.
	LoadBalancerPlanner() (LoadBalancerPlanner, bool)
	// AnnotationChecker is the provider's annotation checker (no cloud
	// call).
	AnnotationChecker() (AnnotationChecker, bool)
	// IPFamilyLister names the IP families the provider's load balancers
	// serve (no cloud call).
	IPFamilyLister() (IPFamilyLister, bool)
	// EndpointTargeter is the provider's endpoint-target extension.
	EndpointTargeter() (EndpointTargeter, bool)
	// Unwrap returns the provider itself, every call of which bypasses
	// metrics and pacing.
	Unwrap() cloudprovider.Interface
}
