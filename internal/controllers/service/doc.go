// Package service is Stratus' service-lb-controller: it turns Services of
// type LoadBalancer into cloud load balancers and keeps them in step with
// the Service and with the cluster's nodes.
//
// The package owns:
//   - the per-Service sync (sync.go): finalizer, EnsureLoadBalancer or a
//     hosts-only UpdateLoadBalancer, status.loadBalancer.ingress, and the
//     cleanup when the Service is deleted or stops wanting a load balancer;
//   - the node tracker (nodes.go): the eligible node set, and coalescing of
//     bursts of node changes into one pass over the load balancers whose
//     node set actually changed;
//   - the orphan collector (orphans.go): load balancers the cloud lists for
//     the cluster whose Service is gone, reported and optionally deleted;
//   - small pure predicates (predicates.go) shared by all of the above.
//
// Semantics follow upstream's k8s.io/cloud-provider/controllers/service
// (finalizer service.kubernetes.io/load-balancer-cleanup, event reasons,
// node predicates of KEP-3458); the differences are documented in
// docs/controllers/service.md.
package service
