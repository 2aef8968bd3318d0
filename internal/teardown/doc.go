// Package teardown deletes what a cluster owns in its cloud: the load
// balancers and routes that outlive a cluster torn down without deleting
// every Service first. It lists them through the provider's own scoping
// (cloud.LoadBalancerLister and cloudprovider.Routes.ListRoutes, both by
// cluster name), deletes them through the standard provider calls the
// controllers use, and waits until the cloud's lists no longer hold them.
// It refuses what it cannot prove is the cluster's: a load balancer whose
// Service identity the cloud did not record, a route outside the cluster
// CIDRs it is given. A dry run, the default, only lists.
package teardown
