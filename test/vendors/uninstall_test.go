package vendors_test

import (
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestChartUninstallLeavesSharedServiceAccounts installs charts/stratus
// with the helm CLI into a real API server that has
// kube-system/node-controller, kube-controller-manager's own ServiceAccount
// (its per-controller credentials), and kube-system/service-controller as
// an earlier version of the chart left it (owned by this release), then
// uninstalls it: both stay, the first untouched, the second declared with
// Helm's keep policy (so that upgrading from that version does not delete
// it either), while the daemon's own ServiceAccount goes with the release.
func TestChartUninstallLeavesSharedServiceAccounts(t *testing.T) {
	helm := filepath.Join(testbed.RequireBinaries(t, "helm"), "helm")
	env := testbed.Start(t)
	ctx := testbed.Context(t, 3*time.Minute)
	run := helmCLI(ctx, t, env, helm)
	sas := env.Clientset.CoreV1().ServiceAccounts("kube-system")
	earlier := metav1.ObjectMeta{Name: "service-controller",
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "stratus", "meta.helm.sh/release-namespace": "kube-system"}}
	for _, m := range []metav1.ObjectMeta{{Name: "node-controller"}, earlier} {
		if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: m}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := run("install", "stratus", "../../charts/stratus"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	sa, err := sas.Get(ctx, "service-controller", metav1.GetOptions{})
	if err != nil || sa.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Fatalf("the earlier release's service-controller after install: %v, annotations %v; want it declared with the keep policy", err, sa.Annotations)
	}
	if out, err := run("uninstall", "stratus", "--wait"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	for _, name := range []string{"node-controller", "service-controller"} {
		if _, err := sas.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ServiceAccount kube-system/%s after uninstall: %v", name, err)
		}
	}
	if sa, err := sas.Get(ctx, "node-controller", metav1.GetOptions{}); err == nil && len(sa.Annotations) > 0 {
		t.Errorf("kube-controller-manager's node-controller was taken over: annotations %v", sa.Annotations)
	}
	if _, err := sas.Get(ctx, "cloud-controller-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the daemon's own ServiceAccount after uninstall: %v, want it deleted with the release", err)
	}
}
