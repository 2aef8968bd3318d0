package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/sandbox"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

type sandboxRun struct {
	bin, binDir, state string
	ports              []int
	// vipPool is this run's own, away from another sandbox's default.
	vipPool string
}

// newSandboxRun is a sandbox of the test's own: the stratus binary, a state
// directory, four free ports and a claimed VIP pool.
func newSandboxRun(t *testing.T) sandboxRun {
	t.Helper()
	r := sandboxRun{bin: buildStratus(t), binDir: testbed.RequireBinaries(t, "kube-apiserver", "etcd", "kwok"), state: filepath.Join(t.TempDir(), "state"),
		vipPool: testbed.VIPPool(t).String()}
	for range 4 {
		r.ports = append(r.ports, testbed.FreePort(t))
	}
	return r
}

func (r sandboxRun) start(t *testing.T, logName string, extra ...string) *testbed.Process {
	t.Helper()
	args := []string{"sandbox", "--real-nodes=0",
		"--state-dir=" + r.state, "--bin-dir=" + r.binDir, "--nodes=3", "--zones=3",
		"--apiserver-port=" + strconv.Itoa(r.ports[0]), "--etcd-port=" + strconv.Itoa(r.ports[1]),
		"--localcloud-port=" + strconv.Itoa(r.ports[2]), "--ccm-port=" + strconv.Itoa(r.ports[3]),
		"--ready-timeout=4m",
		// Nodes of stopped machines go NotReady in seconds, not 50.
		"--node-monitor-grace-period=8s", "--node-monitor-period=1s",
		"--vip-pool=" + r.vipPool,
	}
	args = append(args, extra...)
	return testbed.StartProcess(t, filepath.Join(t.TempDir(), logName), r.bin, args...)
}

func waitReady(ctx context.Context, t *testing.T, p *testbed.Process, state string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			code, _ := p.Wait(0)
			b, _ := os.ReadFile(p.LogFile)
			t.Fatalf("sandbox exited early with code %d:\n%s\n%s", code, b, childLogs(state))
		}
		_, err := os.Stat(filepath.Join(state, "ready"))
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("sandbox never became ready: %v", err)
	}
}

// childLogs is the end of each of the sandbox's children's logs: what a
// sandbox that gave up was waiting on is there, not in its own output.
func childLogs(state string) string {
	logs, _ := filepath.Glob(filepath.Join(state, "logs", "*.log"))
	var b strings.Builder
	for _, l := range logs {
		if strings.Contains(l, "etcd") || strings.Contains(l, "kube-apiserver") {
			continue // long and rarely the cause; they stay on disk
		}
		b.WriteString(tailFile(l))
		b.WriteString("\n")
	}
	return b.String()
}

// leftovers lists processes whose command line mentions the state dir.
func leftovers(state string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), state) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func stopAndCheck(t *testing.T, p *testbed.Process, r sandboxRun) {
	t.Helper()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait(2 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("sandbox after SIGTERM: exit %d, %v", code, err)
	}
	if left := leftovers(r.state); len(left) > 0 {
		t.Fatalf("processes left behind after SIGTERM:\n%s", strings.Join(left, "\n"))
	}
	for _, port := range r.ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Errorf("port %d still held after SIGTERM: %v", port, err)
			continue
		}
		_ = l.Close()
	}
	if _, err := os.Stat(filepath.Join(r.state, "ready")); err == nil {
		t.Error("ready marker left after shutdown")
	}
}

func kubeClient(t *testing.T, state string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestSandboxAsAUser(t *testing.T) {
	r := newSandboxRun(t)
	ctx := testbed.Context(t, 12*time.Minute)

	p := r.start(t, "first.log")
	waitReady(ctx, t, p, r.state)
	env, err := os.ReadFile(filepath.Join(r.state, "env"))
	if err != nil || !strings.Contains(string(env), "KUBECONFIG=") || !strings.Contains(string(env), "LOCALCLOUD_TOKEN=") {
		t.Fatalf("env file: %v\n%s", err, env)
	}
	cs := kubeClient(t, r.state)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 3 {
		t.Fatalf("nodes: %v, %d", err, len(nodes.Items))
	}
	uids := map[string]string{}
	zones := map[string]bool{}
	for _, n := range nodes.Items {
		uids[n.Name] = string(n.UID)
		if !strings.HasPrefix(n.Spec.ProviderID, "localcloud://") {
			t.Errorf("node %s providerID %q", n.Name, n.Spec.ProviderID)
		}
		for _, tn := range n.Spec.Taints {
			if tn.Key == cloudproviderapi.TaintExternalCloudProvider {
				t.Errorf("node %s still tainted uninitialized", n.Name)
			}
		}
		zones[n.Labels["topology.kubernetes.io/zone"]] = true
		if len(n.Status.Addresses) == 0 {
			t.Errorf("node %s has no addresses", n.Name)
		}
	}
	if len(zones) != 3 {
		t.Errorf("nodes span zones %v, want 3", zones)
	}
	checkSandboxUnderChartRBAC(ctx, t, r.state)
	svc, err := cs.CoreV1().Services("default").Get(ctx, sandbox.DemoService, metav1.GetOptions{})
	if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("demo service: %v %+v", err, svc.Status)
	}
	vip := svc.Status.LoadBalancer.Ingress[0].IP
	line, err := sandbox.Probe(t.Context(), vip, 80)
	if err != nil {
		t.Fatalf("demo through its VIP: %v", err)
	}
	if !strings.Contains(line, "default/hello") {
		t.Errorf("demo answered %q", line)
	}
	// Knobs set at runtime, quotas included, are kept across a restart.
	userCLI(t, r, "config", "set", "quotas.routesPerCluster=45", "quotas.instances=600", "lbDeletionTime=1500ms")
	stopAndCheck(t, p, r)

	// Second run on the same state dir: the same cluster comes back.
	p = r.start(t, "second.log")
	waitReady(ctx, t, p, r.state)
	cs = kubeClient(t, r.state)
	nodes, err = cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 3 {
		t.Fatalf("nodes after resume: %v, %d", err, len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if uids[n.Name] != string(n.UID) {
			t.Errorf("node %s was recreated on resume (uid %s, was %s)", n.Name, n.UID, uids[n.Name])
		}
	}
	svc, err = cs.CoreV1().Services("default").Get(ctx, sandbox.DemoService, metav1.GetOptions{})
	if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 || svc.Status.LoadBalancer.Ingress[0].IP != vip {
		t.Fatalf("demo service after resume: %v %+v (VIP was %s)", err, svc.Status, vip)
	}
	if _, err := sandbox.Probe(t.Context(), vip, 80); err != nil {
		t.Fatalf("demo after resume: %v", err)
	}
	if out := userCLI(t, r, "config", "get", "quotas.routesPerCluster", "quotas.instances", "lbDeletionTime"); !regexp.MustCompile(
		`quotas.routesPerCluster +45\nquotas.instances +600\nlbDeletionTime +1.5s\n`).MatchString(out) {
		t.Errorf("knobs set before the restart were not kept:\n%s", out)
	}
	// The resumed sandbox as a living cloud.
	checkMetrics(ctx, t, r)
	checkLocalTraffic(ctx, t, cs)
	checkCCMKilled(ctx, t, cs, r, p)
	checkAPIServerKilled(ctx, t, cs, r, p)
	checkNodesFollowInstances(ctx, t, cs, r)
	stopAndCheck(t, p, r)

	checkScaleDown(ctx, t, r)
}

func TestSandboxBadInput(t *testing.T) {
	bin := buildStratus(t)
	binDir := testbed.RequireBinaries(t, "kube-apiserver", "etcd", "kwok")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Close() }()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	incompatible := t.TempDir()
	if err := os.WriteFile(filepath.Join(incompatible, "sandbox.json"), []byte(`{"format":99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args []string
		want string
	}{
		"zero nodes":       {[]string{"--nodes=0"}, "--nodes=0"},
		"negative latency": {[]string{"--latency=-5ms"}, "--latency: latency: -5ms is out of range"},
		"absurd rate":      {[]string{"--rate-limit=1e-300"}, "--rate-limit: rateLimit: 1e-300 is out of range"},
		"port in use":      {[]string{"--apiserver-port=" + busyPort}, "--apiserver-port"},
		"missing binary":   {[]string{"--bin-dir=" + t.TempDir()}, "make tools"},
		"incompatible dir": {[]string{"--state-dir=" + incompatible}, "incompatible"},
		// A controller manager that cannot start stops the sandbox as soon
		// as it is seen to keep failing, with its last words.
		"ccm keeps failing": {[]string{"--ccm-arg=--bogus-flag", "--no-demo", "--nodes=1", "--zones=1", "--ready-timeout=3m",
			"--vip-pool=" + testbed.VIPPool(t).String()}, "stratus-controller-manager keeps failing"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			args := append([]string{"sandbox", "--real-nodes=0", "--state-dir=" + state, "--bin-dir=" + binDir,
				"--etcd-port=" + strconv.Itoa(testbed.FreePort(t)), "--localcloud-port=" + strconv.Itoa(testbed.FreePort(t)),
				"--ccm-port=" + strconv.Itoa(testbed.FreePort(t)), "--apiserver-port=" + strconv.Itoa(testbed.FreePort(t))}, c.args...)
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err == nil {
				t.Fatalf("accepted: %s", out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("message does not say %q:\n%s", c.want, out)
			}
			if strings.Contains(c.want, "keeps failing") && (!strings.Contains(string(out), "unknown flag: --bogus-flag") ||
				strings.Contains(string(out), "Error: waiting for")) {
				t.Fatalf("the sandbox did not stop at once with the controller manager's last log lines:\n%s", out)
			}
			if left := leftovers(state); len(left) > 0 {
				t.Fatalf("processes left behind:\n%s", strings.Join(left, "\n"))
			}
		})
	}
}
