// Package nodelifecycle is the cloud-node-lifecycle-controller: every
// monitor period it asks the cloud about each Node whose Ready condition is
// not True, deletes the Node when its machine is gone and taints it
// node.cloudprovider.kubernetes.io/shutdown:NoSchedule when the machine is
// stopped; Ready Nodes lose that taint.
//
// A Node is deleted only on a positive answer that its machine does not
// exist: a cloud error, a timeout or a rate-limit answer deletes nothing.
// With cloud.InstanceLister one successful list per period answers for
// every NotReady Node; otherwise each costs InstanceExists and
// InstanceShutdown calls, as upstream's controller does. A list answer
// alone never deletes: a Node the list lacks is deleted only when its own
// InstanceExists says the instance is gone too (confirm.go); a
// disagreement keeps it, with a warning event and a count. The deletions
// within a window are capped to a share of the cluster's and of a zone's
// Nodes (cap.go).
package nodelifecycle
