package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stratus-ccm/stratus/pkg/testbed"
	"github.com/stratus-ccm/stratus/pkg/testbed/fakeprovider"
)

func startCCM(t *testing.T, bin string, env *testbed.Env, name string, port int, extra ...string) *testbed.Process {
	t.Helper()
	args := append([]string{
		"controller-manager",
		"--cloud-provider=" + fakeprovider.Name,
		"--kubeconfig=" + env.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect-lease-duration=4s",
		"--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=500ms",
		"--v=2",
	}, extra...)
	return testbed.StartProcess(t, filepath.Join(t.TempDir(), name+".log"), bin, args...)
}

// initializedBy returns who ran the provider's Initialize, i.e. the leader.
func initializedBy(ctx context.Context, cs kubernetes.Interface) string {
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, fakeprovider.InitializedConfigMap, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data["by"]
}

func pidOf(by string) int {
	i := strings.LastIndex(by, "/")
	pid, _ := strconv.Atoi(by[i+1:])
	return pid
}

func TestLeaderElectionFailover(t *testing.T) {
	env := testbed.Start(t)
	bin := buildFakeCCM(t)
	ctx := testbed.Context(t, 3*time.Minute)
	cs := env.Clientset

	a := startCCM(t, bin, env, "a", testbed.FreePort(t))
	b := startCCM(t, bin, env, "b", testbed.FreePort(t))
	procs := map[int]*testbed.Process{a.Pid(): a, b.Pid(): b}

	var leader string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		leader = initializedBy(ctx, cs)
		return leader != "", nil
	}); err != nil {
		t.Fatalf("no replica initialized the provider: %v", err)
	}
	lead := procs[pidOf(leader)]
	if lead == nil {
		t.Fatalf("initialized by %q, which is neither replica", leader)
	}
	lease, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("upstream-named lease kube-system/cloud-controller-manager: %v", err)
	}
	holder := *lease.Spec.HolderIdentity

	// While the leader renews the lease through two lease durations (as
	// the lease's own renewTime shows, however long that takes), the
	// standby must not take over: exactly one leads.
	until := lease.Spec.RenewTime.Add(2 * 4 * time.Second)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if *l.Spec.HolderIdentity != holder {
			return false, fmt.Errorf("lease holder changed from %s to %s while the leader was healthy", holder, *l.Spec.HolderIdentity)
		}
		if now := initializedBy(ctx, cs); now != leader {
			return false, fmt.Errorf("leadership moved from %s to %s while the leader was healthy", leader, now)
		}
		return !l.Spec.RenewTime.Time.Before(until), nil
	}); err != nil {
		t.Fatalf("leader renewing for two lease durations: %v", err)
	}

	if err := lead.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var standby *testbed.Process
	for pid, p := range procs {
		if pid != lead.Pid() {
			standby = p
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return pidOf(initializedBy(ctx, cs)) == standby.Pid(), nil
	}); err != nil {
		t.Fatalf("standby %d did not take over after the leader was killed: %v", standby.Pid(), err)
	}
	lease, _ = cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if *lease.Spec.HolderIdentity == holder {
		t.Fatalf("lease still held by the killed leader %s", holder)
	}
	// It took the lease as it expired, not at a later retry of its elector.
	if b, err := os.ReadFile(standby.LogFile); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(string(b), "Took the lease at its expiry") {
		t.Errorf("the standby's log does not say it took the lease at its expiry: %s", standby.LogFile)
	}

	// SIGTERM is a graceful shutdown: exit 0 and the lease is released.
	if err := standby.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := standby.Wait(40 * time.Second)
	if err != nil || code != 0 {
		t.Fatalf("graceful shutdown: exit code %d, %v", code, err)
	}
	// Releasing the lease is what a clean shutdown does: no error line.
	if b, err := os.ReadFile(standby.LogFile); err != nil {
		t.Fatal(err)
	} else {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "E") && strings.Contains(line, "leader election lost") {
				t.Errorf("SIGTERM logged an error: %s", line)
			}
		}
	}
	lease, _ = cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease not released on SIGTERM: held by %s", *h)
	}
}

func TestLostLeaseExitsNonZero(t *testing.T) {
	env := testbed.Start(t)
	bin := buildFakeCCM(t)
	ctx := testbed.Context(t, 2*time.Minute)
	a := startCCM(t, bin, env, "a", 0)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return initializedBy(ctx, env.Clientset) != "", nil
	}); err != nil {
		t.Fatalf("never led: %v", err)
	}
	// Another party takes the lease away; the leader cannot renew and must
	// stop, non-zero, rather than keep acting.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		lease, err := env.Clientset.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		thief := "someone-else"
		lease.Spec.HolderIdentity = &thief
		d := int32(3600)
		lease.Spec.LeaseDurationSeconds = &d
		now := metav1.NowMicro()
		lease.Spec.RenewTime = &now
		_, err = env.Clientset.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	code, err := a.Wait(30 * time.Second)
	if err != nil {
		t.Fatalf("leader kept running after losing its lease: %v", err)
	}
	if code == 0 {
		t.Fatal("exit code 0 after losing the lease; want non-zero")
	}
}

func TestServingHealthAndMetricsAuth(t *testing.T) {
	env := sharedEnv(t)
	bin := buildFakeCCM(t)
	ctx := testbed.Context(t, 2*time.Minute)
	port := testbed.FreePort(t)
	startCCM(t, bin, env, "a", port, "--leader-elect-resource-name=serving-test")
	get := func(path, token string) (int, string) { return httpsGet(ctx, port, path, token) }
	waitReady(ctx, t, port)
	// A replica that is ready as a standby may win the lease right after:
	// until its caches sync, /readyz says so (500). Anonymous requests
	// must never be refused (401/403) on these paths, and must answer 200
	// once the leader's caches are synced.
	for _, path := range []string{"/healthz", "/livez", "/readyz", "/readyz?verbose"} {
		var code int
		var body string
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			code, body = get(path, "")
			return code == http.StatusOK || code == http.StatusUnauthorized || code == http.StatusForbidden, nil
		})
		if code != http.StatusOK {
			t.Errorf("anonymous %s = %d %s, want 200 (always-allow path)", path, code, body)
		}
		if path == "/readyz?verbose" && (!strings.Contains(body, "[+]informer-sync ok") || !strings.Contains(body, "[+]leader-election ok")) {
			t.Errorf("/readyz?verbose lacks the named checks:\n%s", body)
		}
	}
	// Upstream's delegated authentication: a token the API server rejects
	// is 401; no token is system:anonymous, which RBAC forbids (403).
	if code, body := get("/metrics", "garbage"); code != http.StatusUnauthorized {
		t.Fatalf("/metrics with a garbage token = %d %s, want 401", code, body)
	}
	if code, _ := get("/metrics", ""); code != http.StatusForbidden {
		t.Fatalf("anonymous /metrics = %d, want 403", code)
	}
	reader := serviceAccountToken(ctx, t, env.Clientset, "metrics-reader", true)
	nobody := serviceAccountToken(ctx, t, env.Clientset, "nobody", false)
	if code, _ := get("/metrics", nobody); code != http.StatusForbidden {
		t.Fatalf("/metrics without RBAC = %d, want 403", code)
	}
	code, body := get("/metrics", reader)
	if code != http.StatusOK {
		t.Fatalf("authorized /metrics = %d: %s", code, body)
	}
	// The series component-base gives every upstream component, which
	// dashboards written for upstream CCMs read.
	for _, series := range []string{
		"rest_client_requests_total{", "rest_client_request_duration_seconds_bucket{", "rest_client_rate_limiter_duration_seconds_bucket{",
		"rest_client_response_size_bytes_bucket{", "kubernetes_build_info{",
	} {
		if !strings.Contains(body, "\n"+series) {
			t.Errorf("metrics lack %s:\n%.2000s", series, body)
		}
	}
	// /configz is upstream's: behind the same authorization as /metrics,
	// one object keyed by upstream's name holding the flags in effect.
	if code, _ := get("/configz", nobody); code != http.StatusForbidden {
		t.Errorf("/configz without RBAC = %d, want 403", code)
	}
	code, body = get("/configz", reader)
	if code != http.StatusOK {
		t.Fatalf("authorized /configz = %d: %s", code, body)
	}
	var configz map[string]struct {
		Kind            string
		KubeCloudShared struct{ CloudProvider struct{ Name string } }
		Generic         struct{ LeaderElection struct{ ResourceName string } }
	}
	if err := json.Unmarshal([]byte(body), &configz); err != nil {
		t.Fatalf("/configz: %v: %s", err, body)
	}
	cz := configz["cloudcontrollermanager.config.k8s.io"]
	if cz.Kind != "CloudControllerManagerConfiguration" || cz.KubeCloudShared.CloudProvider.Name != fakeprovider.Name ||
		cz.Generic.LeaderElection.ResourceName != "serving-test" {
		t.Errorf("/configz does not hold the flags in effect: %s", body)
	}
	// --profiling defaults to true, as upstream: pprof is served, behind
	// the same authorization as /metrics.
	if code, _ := get("/debug/pprof/", nobody); code != http.StatusForbidden {
		t.Errorf("/debug/pprof/ without RBAC = %d, want 403", code)
	}
}

// serviceAccountToken creates a ServiceAccount (bound to a ClusterRole that
// may GET /metrics and /configz when allowed) and returns a token for it.
func serviceAccountToken(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, allowed bool) string {
	t.Helper()
	ns := "default"
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if allowed {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/configz"}, Verbs: []string{"get"}}},
		}
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
