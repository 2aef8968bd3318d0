// Package node is the cloud-node-controller: it initializes Nodes that a
// kubelet registered with --cloud-provider=external (they carry the
// node.cloudprovider.kubernetes.io/uninitialized taint) from the cloud's
// instance metadata, and refreshes the addresses and labels of initialized
// Nodes every status period.
//
// It owns, on a Node: spec.providerID (only while empty), status.addresses,
// the topology, instance-type and provider labels, and the removal of the
// uninitialized taint.
//
// When the provider implements cloud.InstanceLister, one ListInstances call
// serves every Node waiting for metadata at that moment and a whole refresh
// period (see batcher.go); otherwise each Node costs one InstanceMetadata
// call, as upstream's controller does.
package node
