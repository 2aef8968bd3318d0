// Package sandbox brings the whole system up on one machine as real
// processes on loopback: etcd and kube-apiserver, localcloud, kwok keeping
// fake nodes alive, a node-port responder standing in for kube-proxy and
// pods, and the Stratus controller manager; then a demo Service of type
// LoadBalancer whose VIP answers traffic. State persists in a directory so
// that a second run resumes the same cluster.
package sandbox
