package vendors_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/internal/app/leader"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestChartAdmitsOnlyTheLeadersPodMark installs charts/stratus with the helm
// CLI into a real API server and acts as the daemon does, with a
// ServiceAccount token bound to one pod, as the kubelet mounts it: the chart's
// RBAC and admission policy together let it set the pod-deletion-cost
// annotation on its own pod, and nothing else: not another pod of the
// namespace, not another annotation or a label of its own pod.
func TestChartAdmitsOnlyTheLeadersPodMark(t *testing.T) {
	helm := filepath.Join(testbed.RequireBinaries(t, "helm"), "helm")
	env := testbed.Start(t)
	ctx := testbed.Context(t, 3*time.Minute)
	run := helmCLI(ctx, t, env, helm)
	if out, err := run("install", "stratus", "../../charts/stratus"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	pods := env.Clientset.CoreV1().Pods("kube-system")
	mk := func(name, sa string) *corev1.Pod {
		p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{ServiceAccountName: sa, AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none:1"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := mk("stratus-own", "cloud-controller-manager")
	other := mk("kube-proxy-other", "default")

	tok, err := env.Clientset.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "cloud-controller-manager",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: own.Name, UID: own.UID}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tok.Status.Token
	daemon := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods("kube-system")
	patch := func(ctx context.Context, name, body string) error {
		_, err := daemon.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	mark := `{"metadata":{"annotations":{"` + leader.AnnotationPodDeletionCost + `":"` + leader.LeaderDeletionCost + `"}}}`

	// The policy takes effect once the API server has loaded it.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = patch(ctx, other.Name, mark)
		return last != nil && strings.Contains(last.Error(), "only the pod its token is bound to"), nil
	}); err != nil {
		t.Fatalf("marking another pod: %v; want the chart's policy to refuse it", last)
	}
	if err := patch(ctx, own.Name, mark); err != nil {
		t.Fatalf("the daemon marking its own pod: %v", err)
	}
	got, err := pods.Get(ctx, own.Name, metav1.GetOptions{})
	if err != nil || got.Annotations[leader.AnnotationPodDeletionCost] != leader.LeaderDeletionCost {
		t.Fatalf("own pod after the mark: %v %v", got.Annotations, err)
	}
	for what, body := range map[string]string{
		"another annotation": `{"metadata":{"annotations":{"example.com/x":"1"}}}`,
		"a label":            `{"metadata":{"labels":{"app":"hijack"}}}`,
		"the image":          `{"spec":{"containers":[{"name":"c","image":"registry.invalid/other:2"}]}}`,
	} {
		err := patch(ctx, own.Name, body)
		if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "the daemon may") {
			t.Errorf("the daemon changing %s of its own pod: %v, want the chart's policy to refuse it", what, err)
		}
	}
}
