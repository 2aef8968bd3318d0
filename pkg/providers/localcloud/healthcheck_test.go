package localcloud

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// externalTrafficPolicy Local is probed over HTTP on the health check
// node port, as kube-proxy serves it; Cluster keeps the TCP probe of the
// first listener's node port, unless kube-proxy's health port is
// configured: then its /healthz.
func TestHealthCheckFollowsTrafficPolicy(t *testing.T) {
	local := &corev1.Service{Spec: corev1.ServiceSpec{ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 31999}}
	hc, err := healthCheckFrom(local, 10256)
	if err != nil {
		t.Fatal(err)
	}
	if hc.Port != 31999 || hc.Path != "/healthz" {
		t.Errorf("Local: port %d path %q, want 31999 /healthz", hc.Port, hc.Path)
	}
	cluster := &corev1.Service{Spec: corev1.ServiceSpec{ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster}}
	if hc, err = healthCheckFrom(cluster, 0); err != nil {
		t.Fatal(err)
	}
	if hc.Port != 0 || hc.Path != "" {
		t.Errorf("Cluster: port %d path %q, want 0 and no path (TCP to the first listener's node port)", hc.Port, hc.Path)
	}
	if hc, err = healthCheckFrom(cluster, 10256); err != nil {
		t.Fatal(err)
	}
	if hc.Port != 10256 || hc.Path != "/healthz" {
		t.Errorf("Cluster with kube-proxy's health port: port %d path %q, want 10256 /healthz", hc.Port, hc.Path)
	}
}
