// Package localcluster holds what running a Kubernetes cluster on one
// machine takes besides the controllers: the control plane (etcd and
// kube-apiserver as child processes, with their certificates, RBAC and
// per-user client certificates), kubeconfig files, the directory of the
// project's binaries, Nodes registered as a kubelet with
// --cloud-provider=external registers them, and a kwok process that keeps
// such Nodes Ready.
//
// The sandbox links it into the stratus binary, so it must not import
// "testing" or envtest; the test-only control-plane harness built on it is
// pkg/testbed. TestNoTestCodeInBinary in cmd/stratus holds the line.
package localcluster
