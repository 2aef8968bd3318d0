// Package testbed starts a real control plane (etcd and kube-apiserver
// built by hack/tools into bin/) with controller-runtime's envtest, and
// gives integration tests a client, a kubeconfig file and a kwok process
// that keeps fake nodes Ready. Helpers that the stratus binary also needs
// (kubeconfig files, node registration, kwok) live in pkg/localcluster;
// this package is for tests only.
//
// Missing binaries fail the test with the command that builds them (make
// tools): an integration test that silently skips proves nothing.
package testbed
