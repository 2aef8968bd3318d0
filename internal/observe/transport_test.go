package observe_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stratus-ccm/stratus/internal/controllerctx"
	"github.com/stratus-ccm/stratus/internal/observe"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// env is the control plane the package's tests share; each test writes
// objects of its own names.
var env *testbed.Env

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The unit run: the tests that need the control plane skip
		// themselves (needEnv), saying so.
		os.Exit(m.Run())
	}
	code, err := runWithControlPlane(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// needEnv skips t under -short, where TestMain started no control plane.
func needEnv(t *testing.T) {
	t.Helper()
	testbed.RequireBinaries(t, "kube-apiserver", "etcd")
}

func runWithControlPlane(m *testing.M) (code int, err error) {
	bin, err := localcluster.BinDir()
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "observe-test-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if env, err = testbed.StartEnv(bin, dir); err != nil {
		return 0, err
	}
	defer func() {
		if stopErr := env.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	return m.Run(), nil
}

// TestDryRunAgainstAPIServer drives every kind of write through the
// observe transport against a real API server: nothing is stored, writes
// that would change something are recorded with their diff, and a write
// that changes nothing is not.
func TestDryRunAgainstAPIServer(t *testing.T) {
	needEnv(t)
	ctx := testbed.Context(t, 2*time.Minute)
	admin := env.Clientset
	createNode(ctx, t, "n1")
	rec, cs := dryRunClient(t, rest.CopyConfig(env.Config), "stratus/cloud-node-controller")
	nodes := cs.CoreV1().Nodes()

	// A patch that changes a label: recorded with the diff, not stored.
	if _, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"zone":"a"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// A patch that is already true: not recorded.
	if _, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"kubernetes.io/os":"linux"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// A status update (PUT on the subresource).
	n, err := nodes.Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
	if _, err := nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nodes.Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Create(ctx, localcluster.NewNode("n2", localcluster.NodeOptions{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	stored, err := admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("n1 after a dry-run delete: %v", err)
	}
	if stored.Labels["zone"] != "" || len(stored.Status.Addresses) != 0 {
		t.Errorf("a dry run was stored: labels %v, addresses %v", stored.Labels, stored.Status.Addresses)
	}
	if _, err := admin.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{}); err == nil {
		t.Error("n2 was created by a dry run")
	}
	var got []string
	for _, c := range rec.Changes() {
		got = append(got, c.String()+": "+c.Diff)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`would update node n1 (cloud-node-controller): metadata.labels.zone: <none> → "a"`,
		`would update node/status n1 (cloud-node-controller): status.addresses: <none> → [{"address":"10.0.0.1","type":"InternalIP"}]`,
		"would delete node n1 (cloud-node-controller)",
		"would create node n2 (cloud-node-controller)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("planned changes lack %q:\n%s", want, all)
		}
	}
	if len(got) != 4 {
		t.Errorf("%d planned changes, want 4 (the no-op patch is not one):\n%s", len(got), all)
	}
}

// A least-privilege writer may patch Nodes it may not get (its reads come
// from a shared cache): the transport still tells what the patch changes,
// reading the object with an empty dry-run patch.
func TestDryRunDiffsAPatchTheWriterMayNotGet(t *testing.T) {
	needEnv(t)
	ctx := testbed.Context(t, 2*time.Minute)
	admin := env.Clientset
	createNode(ctx, t, "p1")
	const ns, name = "kube-system", "patcher"
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"}, Verbs: []string{"patch"}}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := localcluster.ServiceAccountConfig(ctx, env.Config, ns, name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rec, cs := dryRunClient(t, cfg, "stratus/node-route-controller")
	if _, err := cs.CoreV1().Nodes().Get(ctx, "p1", metav1.GetOptions{}); err == nil {
		t.Fatal("the writer may get Nodes: the test would not test the fallback")
	}
	patch := `{"status":{"conditions":[{"type":"NetworkUnavailable","status":"False","reason":"RouteCreated"}]}}`
	if _, err := cs.CoreV1().Nodes().Patch(ctx, "p1", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	// A patch already true plans nothing, read the same way.
	if _, err := cs.CoreV1().Nodes().Patch(ctx, "p1", types.MergePatchType, []byte(`{"metadata":{"labels":{"kubernetes.io/os":"linux"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	changes := rec.Changes()
	if len(changes) != 1 {
		t.Fatalf("planned changes %v, want the condition only", changes)
	}
	if c := changes[0]; c.Kind != "nodes/status" || strings.HasPrefix(c.Diff, "unknown") || !strings.Contains(c.Diff, "NetworkUnavailable") {
		t.Errorf("planned %s: %s; want the condition's diff", c, c.Diff)
	}
}

// The controllers share one client, so the user agent does not tell which
// of them wrote: the controller travels in the call's context, and a
// DELETE, which carries no field manager, is reported under it too. Without
// a context naming one, the field manager names the writer; with neither,
// the change is the honest "unknown".
func TestDryRunNamesTheControllerFromTheContext(t *testing.T) {
	needEnv(t)
	ctx := testbed.Context(t, 2*time.Minute)
	createNode(ctx, t, "c1")
	rec, cs := dryRunClient(t, rest.CopyConfig(env.Config), "stratus-cloud-controller-manager/v0.0.0 (linux/amd64)")
	nodes := cs.CoreV1().Nodes()
	lifecycle := controllerctx.With(ctx, "cloud-node-lifecycle-controller")
	if err := nodes.Delete(lifecycle, "c1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The context wins over the field manager.
	label := func(v string) []byte { return []byte(`{"metadata":{"labels":{"zone":"` + v + `"}}}`) }
	if _, err := nodes.Patch(controllerctx.With(ctx, "cloud-node-controller"), "c1", types.MergePatchType, label("a"),
		metav1.PatchOptions{FieldManager: "node-ipam-controller"}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Patch(ctx, "c1", types.MergePatchType, label("b"), metav1.PatchOptions{FieldManager: "node-ipam-controller"}); err != nil {
		t.Fatal(err)
	}
	if err := nodes.Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rec.Changes() {
		got = append(got, c.String())
	}
	want := []string{
		"would delete node c1 (cloud-node-lifecycle-controller)",
		"would delete node c1 (unknown)",
		"would update node c1 (cloud-node-controller)",
		"would update node c1 (node-ipam-controller)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("planned changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// createNode creates a Node of the given name with the admin client.
func createNode(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if _, err := env.Clientset.CoreV1().Nodes().Create(ctx, localcluster.NewNode(name, localcluster.NodeOptions{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// dryRunClient returns a recorder and a clientset whose writes go through
// observe mode's dry-run transport, speaking JSON with the user agent ua.
func dryRunClient(t *testing.T, cfg *rest.Config, ua string) (*observe.Recorder, kubernetes.Interface) {
	t.Helper()
	rec, err := observe.NewRecorder(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	cfg.UserAgent = ua
	cfg.Wrap(observe.DryRun(rec))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rec, cs
}
