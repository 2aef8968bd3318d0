// Package sandbox brings the whole system up on one machine as real
// processes on loopback: etcd and kube-apiserver, localcloud, a node for
// each running instance of the cluster (the sandbox plays the machines'
// kubelets, kwok sends their heartbeats, and a node monitor marks the
// nodes of stopped machines as upstream's node-lifecycle controller
// would), a node-port responder standing in for kube-proxy and pods, and
// the Stratus controller manager; then demo Services of type LoadBalancer
// whose VIPs answer traffic. Children, etcd and kube-apiserver included,
// are supervised: restarted when they exit, fatal only when they keep
// failing. State persists in a directory
// so that a second run resumes the same cluster.
package sandbox
