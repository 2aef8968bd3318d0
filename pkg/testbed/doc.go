// Package testbed starts a real control plane (etcd and kube-apiserver
// built by hack/tools into bin/) with controller-runtime's envtest, and
// gives integration tests a client, a kubeconfig file, helpers that create
// nodes the way a kubelet with --cloud-provider=external registers them,
// and a kwok process that keeps fake nodes Ready.
//
// Missing binaries fail the test with the command that builds them (make
// tools): an integration test that silently skips proves nothing.
package testbed
