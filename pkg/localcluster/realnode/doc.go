// Package realnode runs real Kubernetes nodes on one machine without a
// container engine: per node a network namespace on a bridge the package
// creates, a containerd 2 of its own (own root, state, socket and runc
// root), a kubelet started with --cloud-provider=external and kube-proxy.
// The sandbox and the tests use it beside kwok's fake nodes.
//
// What it may touch on the machine is narrow and all of it is undone:
//
//   - One slot at a time per cluster: a /24 of the reserved range
//     10.250.0.0/16, held with a file lock so that concurrent clusters (two
//     test binaries, a test and a sandbox) never share addresses or names.
//     A slot whose subnet overlaps an address or route of the machine is
//     skipped.
//   - Non-loopback addresses only on the slot's bridge and in the
//     namespaces it creates; the namespaces get no default route; the
//     machine's forwarding and firewall settings are never written
//     (kube-proxy and the CNI plugins program only the nodes' namespaces).
//   - Every namespace, link, cgroup, mount and process carries the slot's
//     name or lives under the slot's directory, so Stop removes them all,
//     and the next holder of a slot removes what a SIGKILLed holder left.
//
// Daemons enter a node's namespace with nsenter --net= rather than ip netns
// exec, which would remount /sys and hide the cgroup v1 hierarchies. The
// kube-apiserver stays on the machine's loopback; each namespace gets a
// listener on its own 127.0.0.1 with the API server's port that relays to
// it, so the API server's certificate and the kubeconfig files are the same
// inside and out.
package realnode
