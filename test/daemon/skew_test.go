package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// skewModule is the tools module that pins the oldest kube-apiserver the
// version-skew policy supports (docs/providers.md, "Kubernetes versions");
// `make tools` builds it into bin/skew/<version>/.
const skewModule = "../../hack/tools/skew/go.mod"

// gaAPIs is every API Stratus' daemon calls, as group/version → resources
// (subresources as resource/subresource), the list docs/providers.md
// gives. All are GA, so every kube-apiserver the skew policy names serves
// them; TestOldestSupportedAPIServer fails when the daemon calls one that
// is not listed here or no longer calls one that is, so that the list (and
// the policy built on it) cannot go stale. Routes and node IPAM, off in
// deploy/stratus.yaml, write only Nodes and their status, listed here.
var gaAPIs = map[string][]string{
	"v1": {"configmaps", "events", "nodes", "nodes/status", "serviceaccounts", "serviceaccounts/token",
		"services", "services/status"},
	"coordination.k8s.io/v1":   {"leases"},
	"discovery.k8s.io/v1":      {"endpointslices"},
	"authentication.k8s.io/v1": {"tokenreviews"},
	"authorization.k8s.io/v1":  {"subjectaccessreviews", "selfsubjectaccessreviews"},
}

// daemonUsers are the identities the daemon runs as under deploy/'s RBAC:
// its own ServiceAccount and, with --use-service-account-credentials,
// upstream's controller ServiceAccounts (no route-controller: the manifest
// leaves routes off).
var daemonUsers = []string{
	"system:serviceaccount:kube-system:cloud-controller-manager",
	"system:serviceaccount:kube-system:node-controller",
	"system:serviceaccount:kube-system:service-controller",
}

// TestSkewModuleIsOneMinorBehind: hack/tools/skew pins k8s.io/kubernetes
// one minor before the k8s.io/* this module builds on, and the Makefile
// builds that version, so a Kubernetes bump that forgets the skew test bed
// fails here, in the unit run, rather than testing the wrong pair.
func TestSkewModuleIsOneMinorBehind(t *testing.T) {
	skew := skewVersion(t)
	mainVersion, err := requiredVersion("../../go.mod", "k8s.io/api")
	if err != nil {
		t.Fatal(err)
	}
	mainMinor, skewMinor := minorOf(t, mainVersion), minorOf(t, skew)
	if skewMinor != mainMinor-1 {
		t.Errorf("hack/tools/skew pins k8s.io/kubernetes %s (1.%d); the main module is on k8s.io/api %s (1.%d): "+
			"the oldest supported kube-apiserver is 1.%d, bump hack/tools/skew and SKEW_KUBE_VERSION",
			skew, skewMinor, mainVersion, mainMinor, mainMinor-1)
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if want := "\nSKEW_KUBE_VERSION := " + skew + "\n"; !strings.Contains(string(mk), want) {
		t.Errorf("the Makefile's SKEW_KUBE_VERSION is not %s, the version hack/tools/skew pins", skew)
	}
}

// TestOldestSupportedAPIServer runs the daemon as deploy/stratus.yaml
// installs it (its flags, its ServiceAccount and RBAC) against the oldest
// kube-apiserver the version-skew policy supports: the Lease is taken, a
// new Node is initialized, a LoadBalancer Service gets its ingress and
// finalizer, events are written, a NotReady Node whose instance is gone is
// deleted, /metrics answers through delegated authentication and
// authorization, no request of the daemon is refused, and every API it
// called is a GA one this kube-apiserver serves.
func TestOldestSupportedAPIServer(t *testing.T) {
	version := skewVersion(t)
	dir := filepath.Join("skew", version)
	bin := testbed.RequireBinaries(t, filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "etcd"))
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	env, err := testbed.StartEnv(filepath.Join(bin, dir), t.TempDir(), testbed.WithAuditLog(auditLog))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("testbed: stop: %v", err)
		}
	})
	ctx := testbed.Context(t, 5*time.Minute)
	cs := env.Clientset
	sv, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(minorOf(t, version)); sv.Major != "1" || sv.Minor != want || sv.GitVersion != version {
		t.Fatalf("kube-apiserver from %s says it is %s (major %q, minor %q), want %s", dir, sv.GitVersion, sv.Major, sv.Minor, version)
	}

	srv, conf := startCloud(t, servicetest.RandomPools(t))
	lc, err := lcclient.New(srv.URL(), srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	instances := map[string]api.Instance{}
	for _, name := range []string{"skew-a", "skew-gone"} {
		inst, err := lc.CreateInstance(ctx, api.CreateInstanceRequest{Name: name, Zone: "zone-a", Region: "region-1", Type: "small"})
		if err != nil {
			t.Fatal(err)
		}
		instances[name] = *inst
	}
	port := testbed.FreePort(t)
	stop := startDeployedCCM(ctx, t, env, conf, port)

	poll := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, cond); err != nil {
			t.Fatalf("against kube-apiserver %s, waiting for %s: %v", version, what, err)
		}
	}
	defaults := app.NewOptions()
	poll("the leader Lease", func(ctx context.Context) (bool, error) {
		l, err := cs.CoordinationV1().Leases(defaults.LeaderElectNamespace).Get(ctx, defaults.LeaderElectName, metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && l.Spec.RenewTime != nil, nil
	})

	for name := range instances {
		if _, err := localcluster.CreateNode(ctx, cs, name, localcluster.NodeOptions{Unmanaged: true}); err != nil {
			t.Fatal(err)
		}
		if err := localcluster.SetReady(ctx, cs, name, corev1.ConditionTrue); err != nil {
			t.Fatal(err)
		}
	}
	poll("the Nodes initialized", func(ctx context.Context) (bool, error) {
		for name := range instances {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || uninitialized(n) {
				return false, nil
			}
		}
		return true, nil
	})
	checkInitialized(ctx, t, env, instances["skew-a"])

	if _, err := cs.CoreV1().Services("default").Create(ctx, lbService("default", "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("the Service's ingress and finalizer", func(ctx context.Context) (bool, error) {
		svc, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(svc.Status.LoadBalancer.Ingress) == 1 && servicehelper.HasLBFinalizer(svc), nil
	})

	if err := localcluster.SetReady(ctx, cs, "skew-gone", corev1.ConditionFalse); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.DeleteInstance(ctx, instances["skew-gone"].ID); err != nil {
		t.Fatal(err)
	}
	poll("the NotReady Node without an instance deleted", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, "skew-gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	for _, e := range []struct{ kind, name, reason string }{
		{"Service", "web", service.ReasonEnsuredLoadBalancer},
		{"Node", "skew-gone", nodelifecycle.ReasonDeletingNode},
	} {
		poll(fmt.Sprintf("a %s event on %s %s", e.reason, e.kind, e.name), func(ctx context.Context) (bool, error) {
			return hasEvent(ctx, env, e.kind, e.name, e.reason), nil
		})
	}
	// TokenReview and SubjectAccessReview, asked of this kube-apiserver.
	scrape(ctx, t, port, metricsReaderToken(ctx, t, cs))

	// Stopped first, so that the audit log holds all the daemon did.
	stop()
	checkAPIsUsed(t, env, auditLog)
}

// startDeployedCCM runs the daemon as deploy/stratus.yaml does: as its
// ServiceAccount under the manifest's RBAC (applied here, on this
// kube-apiserver's bootstrap roles), with the manifest's flags (every
// controller, leader election, a ServiceAccount per controller, the secure
// port), plus a short node monitor period so that the test does not wait
// upstream's 5 s per period. stop ends it and waits; the test's end calls
// it too.
func startDeployedCCM(ctx context.Context, t *testing.T, env *testbed.Env, conf string, port int) (stop func()) {
	t.Helper()
	rbac, err := deploy.Manifest(deploy.Default)
	if err != nil {
		t.Fatal(err)
	}
	if err := localcluster.InstallRBAC(ctx, env.Config, rbac); err != nil {
		t.Fatal(err)
	}
	saCfg, err := localcluster.ServiceAccountConfig(ctx, env.Config, deploy.Namespace, "cloud-controller-manager", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := localcluster.WriteKubeconfig(saCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	o := app.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{
		"--cloud-provider=" + lcprovider.ProviderName, "--cloud-config=" + conf, "--kubeconfig=" + kubeconfig,
		"--cluster-name=" + servicetest.ClusterName, "--controllers=*",
		"--leader-elect=true", "--leader-elect-resource-namespace=kube-system",
		"--use-service-account-credentials=true", "--allocate-node-cidrs=false", "--configure-cloud-routes=false",
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--node-monitor-period=1s",
	}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.Run(runCtx, o, app.Deps{Providers: providers(t), Metrics: prometheus.NewRegistry(), SkipControllerNameValidation: true})
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// checkInitialized checks what the node controller wrote on the Node of
// inst: providerID, the instance's addresses and its topology labels.
func checkInitialized(ctx context.Context, t *testing.T, env *testbed.Env, inst api.Instance) {
	t.Helper()
	n, err := env.Clientset.CoreV1().Nodes().Get(ctx, inst.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := lcprovider.ProviderID(inst.ID); n.Spec.ProviderID != want {
		t.Errorf("node %s providerID = %q, want %q", n.Name, n.Spec.ProviderID, want)
	}
	if !slices.Contains(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: inst.Addresses.Internal}) {
		t.Errorf("node %s addresses %v lack InternalIP %s", n.Name, n.Status.Addresses, inst.Addresses.Internal)
	}
	for k, v := range map[string]string{
		corev1.LabelTopologyZone: inst.Zone, corev1.LabelTopologyRegion: inst.Region, corev1.LabelInstanceTypeStable: inst.Type,
	} {
		if n.Labels[k] != v {
			t.Errorf("node %s label %s = %q, want %q", n.Name, k, n.Labels[k], v)
		}
	}
}

// hasEvent reports whether a core/v1 Event with reason is recorded on the
// object kind/name in the default namespace (where a Node's events go).
func hasEvent(ctx context.Context, env *testbed.Env, kind, name, reason string) bool {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name, "reason": reason}.AsSelector().String()
	evs, err := env.Clientset.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: sel})
	return err == nil && len(evs.Items) > 0
}

// checkAPIsUsed reads every request of the daemon's identities from the
// audit log and fails on one to an API outside gaAPIs, one this
// kube-apiserver does not serve, or one refused with 403: the manifest's
// RBAC must hold on this kube-apiserver's bootstrap roles as on the test
// bed's.
func checkAPIsUsed(t *testing.T, env *testbed.Env, auditLog string) {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	used := map[string]map[string]bool{} // group/version → resource[/subresource]
	spoke := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line: %v", err)
		}
		if !slices.Contains(daemonUsers, e.User.Username) || e.ObjectRef == nil || e.Stage != auditv1.StageResponseComplete {
			continue
		}
		o := e.ObjectRef
		gv, res := o.APIVersion, o.Resource
		if o.APIGroup != "" {
			gv = o.APIGroup + "/" + o.APIVersion
		}
		if o.Subresource != "" {
			res += "/" + o.Subresource
		}
		if used[gv] == nil {
			used[gv] = map[string]bool{}
		}
		used[gv][res] = true
		spoke[e.User.Username]++
		if e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusForbidden {
			t.Errorf("%s %s %s/%s by %s refused: %s", e.Verb, res, o.Namespace, o.Name, e.User.Username, e.ResponseStatus.Message)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, u := range daemonUsers {
		if spoke[u] == 0 {
			t.Errorf("the audit log holds no request by %s: the daemon did not run as it", u)
		}
	}
	ga := regexp.MustCompile(`^v[0-9]+$`)
	for gv, resources := range used {
		for res := range resources {
			if !slices.Contains(gaAPIs[gv], res) {
				t.Errorf("the daemon called %s %s, which docs/providers.md does not list among the APIs it uses (gaAPIs)", gv, res)
			}
		}
		if !ga.MatchString(gv[strings.LastIndex(gv, "/")+1:]) {
			t.Errorf("the daemon called %s, which is not a GA API version", gv)
		}
		served, err := env.Clientset.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Errorf("kube-apiserver does not serve %s, which the daemon called: %v", gv, err)
			continue
		}
		for res := range resources {
			if !slices.ContainsFunc(served.APIResources, func(r metav1.APIResource) bool { return r.Name == res }) {
				t.Errorf("kube-apiserver does not serve %s %s, which the daemon called", gv, res)
			}
		}
	}
	// The reverse too, so that the documented list names nothing the
	// daemon no longer calls.
	for gv, resources := range gaAPIs {
		for _, res := range resources {
			if !used[gv][res] {
				t.Errorf("gaAPIs (and docs/providers.md) list %s %s, which the daemon did not call", gv, res)
			}
		}
	}
	t.Logf("APIs the daemon called: %v", used)
}

// skewVersion is the k8s.io/kubernetes version hack/tools/skew pins.
func skewVersion(t *testing.T) string {
	t.Helper()
	v, err := requiredVersion(skewModule, "k8s.io/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// requiredVersion reads the version of module path that the go.mod file
// requires. A plain scan is enough for the go.mod files go mod tidy
// writes, and keeps golang.org/x/mod out of this module's requirements.
func requiredVersion(file, path string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == path && f[1] != "=>" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", file, path)
}

// minorOf is the minor of a Kubernetes version, v1.36.3 or v0.36.3 → 36.
func minorOf(t *testing.T, v string) int {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 3 {
		t.Fatalf("version %q is not vX.Y.Z", v)
	}
	m, err := strconv.Atoi(parts[1])
	if err != nil {
		t.Fatalf("version %q: minor: %v", v, err)
	}
	return m
}
