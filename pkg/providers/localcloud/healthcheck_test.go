package localcloud

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// externalTrafficPolicy Local is probed over HTTP on the health check
// node port, as kube-proxy serves it; Cluster keeps the TCP probe of the
// first listener's node port, unless kube-proxy's health port is
// configured: then its /healthz.
func TestHealthCheckFollowsTrafficPolicy(t *testing.T) {
	t.Parallel()
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

// A Service's ClientIP session affinity becomes the load balancer's: each
// node's kube-proxy keeps its own affinity table, so only a load balancer
// that keeps a client on one node lets the Service's affinity hold.
func TestSessionAffinityFollowsService(t *testing.T) {
	t.Parallel()
	svc := &corev1.Service{Spec: corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityClientIP,
		Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	l := &loadBalancers{}
	spec, _, err := l.desired(svc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if spec.SessionAffinity != api.SessionAffinityClientIP {
		t.Errorf("ClientIP Service: session affinity %q, want ClientIP", spec.SessionAffinity)
	}
	svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
	if spec, _, err = l.desired(svc, nil); err != nil {
		t.Fatal(err)
	}
	if spec.SessionAffinity != "" {
		t.Errorf("None Service: session affinity %q, want none", spec.SessionAffinity)
	}
}
