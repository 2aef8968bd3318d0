package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/stratus-ccm/stratus/internal/app/leader"
	"github.com/stratus-ccm/stratus/internal/sandbox"
	"github.com/stratus-ccm/stratus/internal/teardown"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// lastReleaseFile names the last release: "vX.Y.Z COMMIT", written by
// `make release` (docs/versioning.md) and read by the upgrade test.
const lastReleaseFile = "../../hack/release/last-release"

// TestUpgradeAndRollback moves a running install from the last release to
// the tree and back, as an operator does: both built as `make release`
// builds them (this machine's platform only), the sandbox's two real
// nodes, the last release's chart installed with `helm install` and the
// sandbox's values, three live load balancers on the real pods (TCP, UDP,
// and a TCP one with externalTrafficPolicy Local and a loadBalancerIP).
// `helm upgrade` to the tree's chart, then `helm rollback`, each while the
// VIPs are asked without pause: not one request fails, no load balancer
// is recreated, updated or given another address, no Node changes (spec,
// labels, addresses, taints), and the Lease passes exactly once, from the
// old leader to a replica of the new revision. Then `helm uninstall`: what
// it leaves in the cloud (the load balancers of the Services that still
// exist, still serving) is what `stratus teardown` lists, as
// docs/install.md tells the operator.
func TestUpgradeAndRollback(t *testing.T) {
	helm := filepath.Join(testbed.RequireBinaries(t, "helm"), "helm")
	tools := testbed.RequireBinaries(t, "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd", "ctr",
		"images/demo.tar", "cyclonedx-gomod")
	from, to := upgradeReleases(t, tools)

	r := newSandboxRun(t)
	// Real nodes only: every node a load balancer targets answers.
	p := r.start(t, "sandbox.log", "--nodes=0", "--real-nodes=2", "--no-ccm")
	ctx := testbed.Context(t, 20*time.Minute)
	waitReady(ctx, t, p, r.state)
	cs := kubeClient(t, r.state)
	env := sandboxEnv(t, r.state)
	lc, err := lcclient.New(env["LOCALCLOUD_URL"], env["LOCALCLOUD_TOKEN"])
	if err != nil {
		t.Fatal(err)
	}
	u := &upgrade{t: t, ctx: ctx, cs: cs, lc: lc, helm: helm, state: r.state, env: env, home: t.TempDir()}
	for _, rel := range []release{from, to} {
		u.importImage(rel)
	}
	t.Cleanup(func() { logChartPods(t, cs) })

	u.run("install", "stratus", from.chart, "-n", "kube-system", "--values", u.env["STRATUS_CHART_VALUES"])
	u.waitRevision(from)
	for _, name := range []string{"real-01", "real-02"} {
		waitCond(ctx, t, "node "+name+" initialized by "+from.version, 4*time.Minute, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil && n.Spec.ProviderID != "" && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
				return t.Key == "node.cloudprovider.kubernetes.io/uninitialized"
			}), nil
		})
	}
	vips := u.createServices()

	for _, step := range []struct {
		name string
		args []string
		rel  release
	}{
		{"upgrade", []string{"upgrade", "stratus", to.chart, "-n", "kube-system", "--values", u.env["STRATUS_CHART_VALUES"]}, to},
		{"rollback", []string{"rollback", "stratus", "1", "-n", "kube-system"}, from},
	} {
		u.step(step.name, step.args, step.rel, vips)
	}
	u.uninstall(r.bin)
	stopAndCheck(t, p, r)
}

// release is one release as `make release` lays it out.
type release struct {
	version, commit, chart, image string
}

// upgradeReleases builds the last release (hack/release/last-release, or
// UPGRADE_FROM="vX.Y.Z COMMIT") and the tree's HEAD, under a pre-release
// of the next patch version with the [Unreleased] notes, with the release
// command itself.
func upgradeReleases(t *testing.T, tools string) (from, to release) {
	t.Helper()
	spec := os.Getenv("UPGRADE_FROM")
	if spec == "" {
		b, err := os.ReadFile(lastReleaseFile)
		if err != nil {
			t.Fatalf("the last release: %v (make release writes %s)", err, lastReleaseFile)
		}
		spec = string(b)
	}
	fields := strings.Fields(spec)
	if len(fields) != 2 {
		t.Fatalf("the last release %q: want \"vX.Y.Z COMMIT\"", spec)
	}
	from = buildRelease(t, tools, fields[0], fields[1], false)
	parts := strings.Split(strings.TrimPrefix(fields[0], "v"), ".")
	patch, err := strconv.Atoi(parts[len(parts)-1])
	if len(parts) != 3 || err != nil {
		t.Fatalf("the last release's version %q: want vMAJOR.MINOR.PATCH", fields[0])
	}
	to = buildRelease(t, tools, fmt.Sprintf("v%s.%s.%d-upgrade.1", parts[0], parts[1], patch+1), "HEAD", true)
	return from, to
}

func buildRelease(t *testing.T, tools, version, commit string, unreleased bool) release {
	t.Helper()
	out := t.TempDir()
	args := []string{"run", "./cmd/release", "-root", "../..", "-commit", commit, "-version", version, "-out", out,
		"-platforms", "linux/" + runtime.GOARCH, "-sbom-tool", filepath.Join(tools, "cyclonedx-gomod")}
	if unreleased {
		args = append(args, "-unreleased")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = "../../hack/dist"
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release %s of %s: %v\n%s", version, commit, err, b)
	}
	dir := filepath.Join(out, version)
	charts, _ := filepath.Glob(filepath.Join(dir, "chart", "*.tgz"))
	if len(charts) != 1 {
		t.Fatalf("release %s: charts %v", version, charts)
	}
	return release{version: version, commit: commit, chart: charts[0],
		image: filepath.Join(dir, "image", "stratus-linux-"+runtime.GOARCH+".tar")}
}

// upgrade is the test's view of the sandbox and the chart's release.
type upgrade struct {
	t     *testing.T
	ctx   context.Context
	cs    kubernetes.Interface
	lc    *lcclient.Client
	helm  string
	state string
	env   map[string]string
	home  string
}

// run runs helm as the sandbox's user, and returns what it printed.
func (u *upgrade) run(args ...string) string {
	u.t.Helper()
	cmd := exec.CommandContext(u.ctx, u.helm, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(u.state, "kubeconfig"),
		"HELM_CACHE_HOME="+filepath.Join(u.home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(u.home, "config"),
		"HELM_DATA_HOME="+filepath.Join(u.home, "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		u.t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	u.t.Logf("helm %s: %s", args[0], strings.TrimSpace(string(out)))
	return string(out)
}

// importImage imports a release's image into each real node's containerd
// with the env file's ctr, as docs/sandbox.md says.
func (u *upgrade) importImage(rel release) {
	u.t.Helper()
	for _, s := range strings.Fields(u.env["STRATUS_REAL_NODE_SOCKETS"]) {
		cmd := exec.CommandContext(u.ctx, u.env["STRATUS_CTR"], "--address", s, "-n", "k8s.io", "images", "import",
			"--platform", "linux/"+runtime.GOARCH, rel.image)
		if out, err := cmd.CombinedOutput(); err != nil {
			u.t.Fatalf("import %s into %s: %v\n%s", rel.image, s, err, out)
		}
	}
}

// chartPods are the chart's pods, those being deleted included.
func (u *upgrade) chartPods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := u.cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + chartRelease})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitRevision waits until the chart's pods are two, Ready, all of rel's
// image, one of them leading and holding the Lease, and marked to be
// replaced last; it returns the leading pod.
func (u *upgrade) waitRevision(rel release) corev1.Pod {
	u.t.Helper()
	image := ":" + rel.version
	var pods []corev1.Pod
	waitCond(u.ctx, u.t, "the chart's two pods of "+rel.version+" ready", 4*time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = u.chartPods(ctx); err != nil {
			return false, nil
		}
		return len(pods) == 2 && !slices.ContainsFunc(pods, func(p corev1.Pod) bool {
			return !podReady(&p) || p.DeletionTimestamp != nil || !strings.HasSuffix(p.Spec.Containers[0].Image, image)
		}), nil
	})
	leading := checkPodLeads(u.ctx, u.t, u.state, u.cs, pods)
	waitCond(u.ctx, u.t, "the leader's pod marked to be replaced last", time.Minute, func(ctx context.Context) (bool, error) {
		p, err := u.cs.CoreV1().Pods("kube-system").Get(ctx, leading.Name, metav1.GetOptions{})
		return err == nil && p.Annotations[leader.AnnotationPodDeletionCost] == leader.LeaderDeletionCost, nil
	})
	for _, p := range pods {
		if p.Name != leading.Name && p.Annotations[leader.AnnotationPodDeletionCost] != "" {
			u.t.Errorf("the standby %s is marked too: %v", p.Name, p.Annotations)
		}
	}
	return leading
}

// upgradeServices are the live load balancers, on the sandbox's real demo
// pods: name, protocol, port, traffic policy Local.
var upgradeServices = []struct {
	name     string
	protocol corev1.Protocol
	port     int32
	local    bool
}{
	{"up-tcp", corev1.ProtocolTCP, 80, false},
	{"up-udp", corev1.ProtocolUDP, 7, false},
	{"up-local", corev1.ProtocolTCP, 80, true},
}

// createServices creates upgradeServices, up-local with a loadBalancerIP
// from the real nodes' VIP pool, and returns their VIPs once each answers.
func (u *upgrade) createServices() map[string]string {
	u.t.Helper()
	demo := waitVIP(u.ctx, u.t, u.cs, sandbox.DemoRealService)
	addr := netip.MustParseAddr(demo)
	pool := netip.PrefixFrom(addr, 25).Masked()
	fixed := pool.Addr()
	for range 100 {
		fixed = fixed.Next()
	}
	vips := map[string]string{}
	for _, s := range upgradeServices {
		target := intstr.FromInt32(8080)
		if s.protocol == corev1.ProtocolUDP {
			target = intstr.FromInt32(7)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: s.name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": sandbox.DemoRealService},
				Ports: []corev1.ServicePort{{Name: "p", Protocol: s.protocol, Port: s.port, TargetPort: target}}}}
		if s.local {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			svc.Spec.LoadBalancerIP = fixed.String()
		}
		if _, err := u.cs.CoreV1().Services("default").Create(u.ctx, svc, metav1.CreateOptions{}); err != nil {
			u.t.Fatal(err)
		}
	}
	for _, s := range upgradeServices {
		vips[s.name] = waitVIP(u.ctx, u.t, u.cs, s.name)
		waitCond(u.ctx, u.t, s.name+" answering", 2*time.Minute, func(ctx context.Context) (bool, error) {
			return askVIP(ctx, s.protocol, vips[s.name], s.port) == nil, nil
		})
	}
	if vips["up-local"] != fixed.String() {
		u.t.Errorf("up-local's VIP %s, want its loadBalancerIP %s", vips["up-local"], fixed)
	}
	return vips
}

// step runs one helm command that moves the install to rel, with traffic
// on every VIP and watches on Nodes, the Lease and the load balancers, and
// checks what the test's comment promises.
func (u *upgrade) step(name string, args []string, rel release, vips map[string]string) {
	u.t.Helper()
	beforeLBs := u.loadBalancers()
	w := u.watch()
	traffic := startTraffic(u.ctx, vips)
	u.run(args...)
	leading := u.waitRevision(rel)
	// The new leader has started its controllers and resynced every
	// Service and Node by now; a few more seconds of traffic and watching.
	time.Sleep(5 * time.Second)
	counts := traffic.stop()
	transitions, holders, nodeChanges := w.stop()
	afterLBs := u.loadBalancers()

	for svc, c := range counts {
		u.t.Logf("%s: %s: %d requests, %d failed", name, svc, c.ok+c.failed, c.failed)
		if c.failed > 0 || c.ok == 0 {
			u.t.Errorf("%s: %s: %d of %d requests failed (first: %v)", name, svc, c.failed, c.ok+c.failed, c.first)
		}
	}
	if d := diffLBs(beforeLBs, afterLBs); d != "" {
		u.t.Errorf("%s changed load balancers: %s", name, d)
	}
	for _, c := range nodeChanges {
		u.t.Errorf("%s changed a Node: %s", name, c)
	}
	if holder := leaseHolderOf(u.ctx, u.cs); transitions != 1 || len(holders) != 1 || holders[0] != holder {
		u.t.Errorf("%s: the Lease passed %d times, to %v; want once, to the new leader %s (pod %s)", name, transitions, holders, holder, leading.Name)
	}
	u.t.Logf("%s to %s: the Lease passed %d time(s), to %v; %d load balancers untouched", name, rel.version, transitions, holders, len(afterLBs))
}

// uninstall runs `helm uninstall` and checks what it leaves: every load
// balancer of a Service that still exists, still answering, each listed by
// `stratus teardown`'s dry run, as docs/install.md says to check.
func (u *upgrade) uninstall(stratus string) {
	u.t.Helper()
	before := u.loadBalancers()
	u.run("uninstall", "stratus", "-n", "kube-system", "--wait")
	waitCond(u.ctx, u.t, "the chart's pods gone", 2*time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := u.chartPods(ctx)
		return err == nil && len(pods) == 0, nil
	})
	if d := diffLBs(before, u.loadBalancers()); d != "" {
		u.t.Errorf("helm uninstall changed load balancers: %s", d)
	}
	cloudConfig := filepath.Join(u.home, "cloud.yaml")
	if err := os.WriteFile(cloudConfig, []byte(u.chartCloudConfig()), 0o600); err != nil {
		u.t.Fatal(err)
	}
	out, err := exec.CommandContext(u.ctx, stratus, "teardown", "--cluster-name="+u.env["LOCALCLOUD_CLUSTER"],
		"--cloud-provider=localcloud", "--cloud-config="+cloudConfig, "-o", "json").Output()
	// Exit code 3: the cloud saw changes lately (this test's), so --yes
	// would be refused; the dry run's list is what is asked for.
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 3) {
		u.t.Fatalf("stratus teardown (dry run): %v\n%s", err, out)
	}
	var rep teardown.Summary
	if err := json.Unmarshal(out, &rep); err != nil {
		u.t.Fatalf("stratus teardown's report: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	for _, o := range rep.Objects {
		// "namespace/name (uid)"
		svc, _, _ := strings.Cut(o.Service, " ")
		listed[svc] = o.Kind == teardown.KindLoadBalancer
	}
	for _, s := range upgradeServices {
		if !listed["default/"+s.name] {
			u.t.Errorf("stratus teardown after helm uninstall does not list %s's load balancer: %s", s.name, out)
		}
		vip := vipOf(u.ctx, u.t, u.cs, s.name)
		if err := askVIP(u.ctx, s.protocol, vip, s.port); err != nil {
			u.t.Errorf("%s's load balancer after helm uninstall: %v, want it left serving", s.name, err)
		}
	}
	if !rep.DryRun || len(rep.Objects) < len(upgradeServices) {
		u.t.Errorf("stratus teardown: %+v, want a dry run listing at least the test's load balancers", rep)
	}
}

// chartCloudConfig is the cloud config the sandbox's chart values carry.
func (u *upgrade) chartCloudConfig() string {
	b, err := os.ReadFile(u.env["STRATUS_CHART_VALUES"])
	if err != nil {
		u.t.Fatal(err)
	}
	var values struct {
		CloudConfig struct {
			Data string `json:"data"`
		} `json:"cloudConfig"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil || values.CloudConfig.Data == "" {
		u.t.Fatalf("cloudConfig.data in %s: %v", u.env["STRATUS_CHART_VALUES"], err)
	}
	return values.CloudConfig.Data
}
