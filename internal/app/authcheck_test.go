package app_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestMissingDelegatedAuthPermissionsNamed: the secure port's delegated
// authentication and authorization run as a ServiceAccount without
// TokenReview and SubjectAccessReview rights. Protected paths answer 401,
// then 500 with TokenReviews granted, as upstream's do, and the log says
// at start and at each change exactly which permissions are missing, for
// which identity and flag; once RBAC grants them, the log says so and
// /metrics serves.
func TestMissingDelegatedAuthPermissionsNamed(t *testing.T) {
	env := sharedEnv(t)
	bin := buildFakeCCM(t)
	ctx := testbed.Context(t, 3*time.Minute)
	cs := env.Clientset
	const sa = "no-reviews"
	token := serviceAccountToken(ctx, t, cs, sa, false)
	kubeconfig := filepath.Join(t.TempDir(), "no-reviews.kubeconfig")
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	if err := localcluster.WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	port := testbed.FreePort(t)
	p := startCCM(t, bin, env, "authcheck", port, "--leader-elect-resource-name=authcheck-test",
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		// Reading the client CA ConfigMap is a third permission, whose
		// absence upstream's authenticator already reports at start;
		// DigitalOcean's and kube-vip's mains skip it this way.
		"--authentication-skip-lookup")
	waitReady(ctx, t, port)

	identity := "identity system:serviceaccount:default:" + sa
	for _, want := range []string{
		"create tokenreviews.authentication.k8s.io (needed by --authentication-kubeconfig, " + identity,
		"create subjectaccessreviews.authorization.k8s.io (needed by --authorization-kubeconfig, " + identity,
		"kubeconfig " + kubeconfig,
	} {
		waitLog(ctx, t, p, want)
	}
	reader := serviceAccountToken(ctx, t, cs, "reader-of-authcheck", true)
	// Upstream's answers: a token that cannot be reviewed is 401.
	if code, body := httpsGet(ctx, port, "/metrics", reader); code != http.StatusUnauthorized {
		t.Errorf("/metrics while TokenReviews are forbidden = %d %s, want 401 (upstream's answer)", code, body)
	}

	// Grant TokenReviews: the check says SubjectAccessReviews alone are
	// missing now, and an authorization that cannot be asked is 500.
	grant(ctx, t, cs, sa, "tokenreviews", "authentication.k8s.io")
	waitLog(ctx, t, p, `missing=["create subjectaccessreviews.authorization.k8s.io (needed by --authorization-kubeconfig, `+identity)
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		code, _ := httpsGet(ctx, port, "/metrics", reader)
		return code == http.StatusInternalServerError, nil
	}); err != nil {
		t.Errorf("/metrics while SubjectAccessReviews are forbidden never answered 500 (upstream's answer)")
	}

	// Grant the other, as the chart's role does: the check says so, and
	// the secure port serves.
	grant(ctx, t, cs, sa, "subjectaccessreviews", "authorization.k8s.io")
	waitLog(ctx, t, p, "Delegated authentication and authorization now have the permissions they need")
	var code int
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		code, _ = httpsGet(ctx, port, "/metrics", reader)
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("/metrics after the grant = %d, want 200", code)
	}
}

// grant lets ServiceAccount sa in default create resource in group.
func grant(ctx context.Context, t *testing.T, cs kubernetes.Interface, sa, resource, group string) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "create-" + resource},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"create"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "create-" + resource},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "default"}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitLog waits until the process's log contains want.
func waitLog(ctx context.Context, t *testing.T, p *testbed.Process, want string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(p.LogFile)
		return err == nil && strings.Contains(string(b), want), nil
	}); err != nil {
		t.Fatalf("the log %s never said %q", p.LogFile, want)
	}
}
