package service

// Event reasons, as upstream's service controller spells them, so that
// alerts and runbooks written for it keep working.
const (
	ReasonEnsuringLoadBalancer     = "EnsuringLoadBalancer"
	ReasonEnsuredLoadBalancer      = "EnsuredLoadBalancer"
	ReasonSyncLoadBalancerFailed   = "SyncLoadBalancerFailed"
	ReasonDeletingLoadBalancer     = "DeletingLoadBalancer"
	ReasonDeletedLoadBalancer      = "DeletedLoadBalancer"
	ReasonDeleteLoadBalancerFailed = "DeleteLoadBalancerFailed"
	ReasonUpdatedLoadBalancer      = "UpdatedLoadBalancer"
	ReasonUpdateLoadBalancerFailed = "UpdateLoadBalancerFailed"
	ReasonUnAvailableLoadBalancer  = "UnAvailableLoadBalancer"
	// ReasonLoadBalancerIPIgnored is Stratus' own: the load balancer's
	// addresses do not include the spec.loadBalancerIP the Service asked for.
	ReasonLoadBalancerIPIgnored = "LoadBalancerIPIgnored"
	// ReasonUnknownAnnotation is Stratus' own: the Service carries an
	// annotation under the provider's prefix that the provider does not read.
	ReasonUnknownAnnotation = "UnknownAnnotation"
)

// Actions of events.k8s.io/v1 Events: what the controller was doing.
const (
	actionEnsure = "EnsureLoadBalancer"
	actionUpdate = "UpdateLoadBalancer"
	actionDelete = "EnsureLoadBalancerDeleted"
	// actionUpdateEndpoints: an endpoint-target load balancer's endpoints
	// changed (cloud.EndpointTargeter).
	actionUpdateEndpoints = "EnsureLoadBalancerEndpoints"
)
