package sandbox

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// A DNS Deployment counts as rolled out only when its current template
// is what runs: a pod of an earlier run still available, or a status the
// controller has not brought up to date, does not pass.
func TestDNSRolledOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		gen    int64
		status appsv1.DeploymentStatus
		want   bool
	}{
		{"rolled out", 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}, true},
		{"status of the previous generation", 3, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}, false},
		{"old pod available, new one pending", 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 1}, false},
		{"new pod not ready", 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1}, false},
		{"no pod yet", 1, appsv1.DeploymentStatus{ObservedGeneration: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := dnsDeployment("digest")
			d.Generation, d.Status = tc.gen, tc.status
			var last string
			if got := dnsRolledOut(d, &last); got != tc.want {
				t.Errorf("dnsRolledOut = %v (%s), want %v", got, last, tc.want)
			}
			if last == "" {
				t.Error("no progress line for the error message")
			}
		})
	}
}
