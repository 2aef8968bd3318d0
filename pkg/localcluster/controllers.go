package localcluster

import (
	"path/filepath"
	"strconv"
)

// The users kube-controller-manager and kube-scheduler authenticate as;
// kube-apiserver's bootstrap RBAC roles are bound to them.
const (
	ControllerManagerUser = "system:kube-controller-manager"
	SchedulerUser         = "system:kube-scheduler"
)

// ControllerManagerArgs are kube-controller-manager's flags for a cluster
// whose cloud loops run in a cloud-controller-manager: no --cloud-provider
// (the node, route and service loops are the CCM's) and no node IPAM
// (--allocate-node-cidrs=false; the CCM allocates pod CIDRs). It runs the
// rest as in any cluster (namespace deletion, garbage collection,
// EndpointSlices, node lifecycle with its not-ready taints), one instance
// without leader election, each controller with its own ServiceAccount's
// credentials as kubeadm sets it up. Its serving port is on 127.0.0.1.
func (p *ControlPlane) ControllerManagerArgs(kubeconfig string, port int) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + filepath.Join(p.CertDir, "sa.key"),
		"--root-ca-file=" + filepath.Join(p.CertDir, "ca.crt"),
		"--allocate-node-cidrs=false",
	}
}

// SchedulerArgs are kube-scheduler's flags: one instance, its serving
// port on 127.0.0.1.
func SchedulerArgs(kubeconfig string, port int) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
	}
}
