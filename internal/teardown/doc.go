// Package teardown deletes what a cluster owns in its cloud: the load
// balancers and routes that outlive a cluster torn down without deleting
// every Service first. It lists them through the provider's own scoping
// (cloud.LoadBalancerLister and cloudprovider.Routes.ListRoutes, both by
// cluster name), deletes them through the standard provider calls the
// controllers use, and waits until the cloud's lists no longer hold them.
// It refuses what it cannot prove is the cluster's: a load balancer whose
// Service identity the cloud did not record, a route outside the cluster
// CIDRs it is given. It refuses the whole deletion, unless forced, when
// the cluster shows signs of life (alive.go): objects the cloud says
// changed recently (cloud.ModificationLister), and, given the cluster's
// API server, a held leader-election Lease or LoadBalancer Services; a
// live controller manager would make every deleted load balancer again,
// with a new address. A dry run, the default, only lists, and reports the
// same signs.
package teardown
