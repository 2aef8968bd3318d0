package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/sandbox"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// sandboxEnv reads the env file the way `source` would, for the variables
// the sandbox exports.
func sandboxEnv(t *testing.T, state string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(state, "env"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		}
		env[k] = v
	}
	return env
}

// userCLI runs `stratus localcloud ARGS` as a user who sourced the env
// file: in a shell, with the stratus the env file puts on the PATH.
func userCLI(t *testing.T, r sandboxRun, args ...string) string {
	t.Helper()
	script := `. "$1" && shift && test "$(command -v stratus)" = "$STRATUS_BIN" && exec stratus localcloud "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh", filepath.Join(r.state, "env")}, args...)...)
	cmd.Env = append(os.Environ(), "STRATUS_BIN="+r.bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("stratus localcloud %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func waitCond(ctx context.Context, t *testing.T, what string, timeout time.Duration, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func vipOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	svc, err := cs.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("service %s: %v", name, err)
	}
	return svc.Status.LoadBalancer.Ingress[0].IP
}

// waitVIP waits for the Service's load balancer and returns its first
// ingress IP.
func waitVIP(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	var vip string
	waitCond(ctx, t, "a load balancer for "+name, 3*time.Minute, func(ctx context.Context) (bool, error) {
		svc, err := cs.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
			return false, nil
		}
		vip = svc.Status.LoadBalancer.Ingress[0].IP
		return true, nil
	})
	return vip
}

// checkLocalTraffic: hello-local's traffic reaches only the nodes its
// stand-in pods run on, once the load balancer's health checks have
// excluded the others.
func checkLocalTraffic(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	vip := vipOf(ctx, t, cs, sandbox.DemoLocalService)
	svc, _ := cs.CoreV1().Services("default").Get(ctx, sandbox.DemoLocalService, metav1.GetOptions{})
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ptrs := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ptrs[i] = &nodes.Items[i]
	}
	pods := sandbox.PodNodes(svc, ptrs)
	if len(pods) == 0 || len(pods) == len(ptrs) {
		t.Fatalf("stand-in pods on %v of %d nodes: ETP Local has nothing to exclude", pods, len(ptrs))
	}
	// The health-check node port answers on pod nodes only, as kube-proxy's
	// does: that is what the load balancer's health checks go by.
	if svc.Spec.HealthCheckNodePort == 0 {
		t.Fatal("hello-local has no health-check node port")
	}
	for _, n := range nodes.Items {
		var ip string
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		_, err := sandbox.Probe(t.Context(), ip, int(svc.Spec.HealthCheckNodePort))
		if answered := err == nil; answered != pods[n.Name] {
			t.Errorf("health-check node port %d on %s (%s): answered %v (%v), runs a stand-in pod %v",
				svc.Spec.HealthCheckNodePort, n.Name, ip, answered, err, pods[n.Name])
		}
	}
	reached := map[string]int{}
	waitCond(ctx, t, "hello-local to answer 20 times in a row", time.Minute, func(context.Context) (bool, error) {
		clear(reached)
		for range 20 {
			line, err := sandbox.Probe(t.Context(), vip, 80)
			if err != nil {
				return false, nil
			}
			node := strings.Fields(strings.TrimPrefix(line, "hello from "))[0]
			reached[node]++
		}
		return true, nil
	})
	for node := range reached {
		if !pods[node] {
			t.Errorf("traffic for an externalTrafficPolicy Local Service reached %s, which runs none of its pods (%v)", node, pods)
		}
	}
}

// checkMetrics: the env file's token reads the controller manager's
// /metrics (once it can review tokens: right after kube-apiserver comes
// back it answers 401 until its TokenReview gets through).
func checkMetrics(ctx context.Context, t *testing.T, r sandboxRun) {
	env := sandboxEnv(t, r.state)
	// The controller manager's serving certificate is self-signed.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var status int
	var body []byte
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env["STRATUS_METRICS_URL"], nil)
		req.Header.Set("Authorization", "Bearer "+env["STRATUS_METRICS_TOKEN"])
		resp, err := c.Do(req)
		if err != nil {
			return false, nil
		}
		defer func() { _ = resp.Body.Close() }()
		status = resp.StatusCode
		body, _ = io.ReadAll(resp.Body)
		return status == http.StatusOK && strings.Contains(string(body), "stratus_cloud_requests_total"), nil
	})
	if err != nil {
		t.Fatalf("metrics with the env file's token: %d\n%.500s", status, body)
	}
}

// ccmPIDs lists the sandbox's controller manager processes.
func ccmPIDs(state string) []int {
	var out []int
	for _, l := range leftovers(state) {
		pid, cmdline, _ := strings.Cut(l, ": ")
		if strings.Contains(cmdline, " controller-manager ") {
			n, _ := strconv.Atoi(pid)
			out = append(out, n)
		}
	}
	return out
}

// checkCCMKilled: SIGKILL of the controller manager; the sandbox starts
// it again within seconds, the new one takes the lease, and the demo keeps
// answering throughout.
func checkCCMKilled(ctx context.Context, t *testing.T, cs kubernetes.Interface, r sandboxRun, p interface{ Exited() bool }) {
	pids := ccmPIDs(r.state)
	if len(pids) != 1 {
		t.Fatalf("controller manager processes: %v", pids)
	}
	vip := vipOf(ctx, t, cs, sandbox.DemoService)
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitCond(ctx, t, "a new controller manager process", 10*time.Second, func(context.Context) (bool, error) {
		now := ccmPIDs(r.state)
		return len(now) == 1 && now[0] != pids[0], nil
	})
	if _, err := sandbox.Probe(t.Context(), vip, 80); err != nil {
		t.Fatalf("demo right after the controller manager was killed: %v", err)
	}
	lease, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := *lease.Spec.HolderIdentity
	waitCond(ctx, t, "the new controller manager to take the lease", time.Minute, func(ctx context.Context) (bool, error) {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != old, nil
	})
	if _, err := sandbox.Probe(t.Context(), vip, 80); err != nil {
		t.Fatalf("demo after the controller manager came back: %v", err)
	}
	if p.Exited() {
		t.Fatal("the sandbox stopped after its controller manager was killed")
	}
}

// checkAPIServerKilled: SIGKILL of kube-apiserver; the sandbox starts it
// again on its port with its certificates (the env file's tokens keep
// working), the clients that lost it carry on, and the demo answers.
func checkAPIServerKilled(ctx context.Context, t *testing.T, cs kubernetes.Interface, r sandboxRun, p interface{ Exited() bool }) {
	apiPIDs := func() []int {
		var out []int
		for _, l := range leftovers(r.state) {
			pid, cmdline, _ := strings.Cut(l, ": ")
			if strings.Contains(cmdline, "kube-apiserver ") {
				n, _ := strconv.Atoi(pid)
				out = append(out, n)
			}
		}
		return out
	}
	pids := apiPIDs()
	if len(pids) != 1 {
		t.Fatalf("kube-apiserver processes: %v", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitCond(ctx, t, "kube-apiserver started again and serving", 2*time.Minute, func(ctx context.Context) (bool, error) {
		now := apiPIDs()
		if len(now) != 1 || now[0] == pids[0] {
			return false, nil
		}
		_, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if p.Exited() {
		t.Fatal("the sandbox stopped after its kube-apiserver was killed")
	}
	checkMetrics(ctx, t, r)
	vip := vipOf(ctx, t, cs, sandbox.DemoService)
	if _, err := sandbox.Probe(t.Context(), vip, 80); err != nil {
		t.Fatalf("demo after kube-apiserver came back: %v", err)
	}
}

// checkNodesFollowInstances: deleting, stopping and creating instances
// with the CLI deletes, taints and adds nodes, by Stratus' controllers.
func checkNodesFollowInstances(ctx context.Context, t *testing.T, cs kubernetes.Interface, r sandboxRun) {
	userCLI(t, r, "instances", "delete", "node-0001")
	userCLI(t, r, "instances", "stop", "node-0002")
	userCLI(t, r, "instances", "create", "node-0004")

	waitCond(ctx, t, "node-0001 deleted after its instance was", 2*time.Minute, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, "node-0001", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	events, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=node-0001,reason=DeletingNode"})
	if err != nil || len(events.Items) == 0 || !strings.Contains(events.Items[0].Source.Component+events.Items[0].ReportingController, "cloud") {
		t.Errorf("no DeletingNode event from the controller manager for node-0001: %v %+v", err, events)
	}
	waitCond(ctx, t, "node-0002 tainted shutdown after its instance stopped", 2*time.Minute, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "node-0002", metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintNodeShutdown }), nil
	})
	waitCond(ctx, t, "node-0004 registered and initialized after its instance was created", 2*time.Minute, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "node-0004", metav1.GetOptions{})
		return err == nil && strings.HasPrefix(n.Spec.ProviderID, "localcloud://") &&
			!slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider }), nil
	})
	// node-0004 may have node-0001's old internal address: what answers
	// there is node-0004, never the deleted node.
	vip := vipOf(ctx, t, cs, sandbox.DemoService)
	waitCond(ctx, t, "the demo to answer 10 times in a row, never from the deleted node-0001", time.Minute, func(context.Context) (bool, error) {
		for range 10 {
			line, err := sandbox.Probe(t.Context(), vip, 80)
			if err != nil || strings.Contains(line, "node-0001") {
				return false, nil
			}
		}
		return true, nil
	})
	if out := userCLI(t, r, "routes", "list"); !strings.Contains(out, "node-0004") {
		t.Errorf("routes list (the env file's cluster) does not show node-0004's route:\n%s", out)
	}
}

// TestSandboxNoCCM: a user runs their own controller manager against a
// --no-ccm sandbox with the env file's flags; it initializes the nodes, and
// stopping the sandbox stops it too.
func TestSandboxNoCCM(t *testing.T) {
	r := newSandboxRun(t)
	ctx := testbed.Context(t, 5*time.Minute)
	p := r.start(t, "no-ccm.log", "--no-ccm", "--no-demo", "--nodes=2", "--zones=1")
	waitReady(ctx, t, p, r.state)
	if pids := ccmPIDs(r.state); len(pids) != 0 {
		t.Fatalf("--no-ccm started a controller manager: %v", pids)
	}
	flags := strings.Fields(sandboxEnv(t, r.state)["STRATUS_CCM_FLAGS"])
	if len(flags) == 0 {
		t.Fatal("the env file has no STRATUS_CCM_FLAGS")
	}
	// Started by hand, in its own session, as from another terminal.
	mine := exec.Command(r.bin, append([]string{"controller-manager"}, flags...)...)
	mine.Stdout, mine.Stderr = io.Discard, io.Discard
	mine.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := mine.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- mine.Wait() }()
	defer func() { _ = mine.Process.Kill() }()

	cs := kubeClient(t, r.state)
	waitCond(ctx, t, "the user's controller manager to initialize the nodes", 2*time.Minute, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 2 {
			return false, nil
		}
		for _, n := range nodes.Items {
			if n.Spec.ProviderID == "" {
				return false, nil
			}
		}
		return true, nil
	})
	stopAndCheck(t, p, r)
	select {
	case err := <-exited:
		t.Logf("the controller manager started by hand ended with the sandbox: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the controller manager started by hand outlived the sandbox")
	}
}

// TestSandboxKilledOutright: a sandbox killed with SIGKILL, with no chance
// to stop its children, leaves nothing running either.
func TestSandboxKilledOutright(t *testing.T) {
	r := newSandboxRun(t)
	ctx := testbed.Context(t, 3*time.Minute)
	p := r.start(t, "killed.log", "--no-demo", "--nodes=1", "--zones=1")
	waitReady(ctx, t, p, r.state)
	if len(leftovers(r.state)) < 4 {
		t.Fatalf("the sandbox runs fewer children than etcd, kube-apiserver, localcloud, kwok and the controller manager:\n%s",
			strings.Join(leftovers(r.state), "\n"))
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitCond(ctx, t, "the children of a killed sandbox to end", time.Minute, func(context.Context) (bool, error) {
		return len(leftovers(r.state)) == 0, nil
	})
}

// checkScaleDown resumes the sandbox with a smaller --nodes.
func checkScaleDown(ctx context.Context, t *testing.T, r sandboxRun) {
	// A smaller --nodes removes the sandbox's own instances above it and
	// their nodes (node-0003 here) and recreates its missing ones (the
	// deleted node-0001); the stopped node-0002 stays, as its machine, and
	// node-0004, which the user created, stays too.
	p := r.start(t, "third.log", "--nodes=2")
	waitReady(ctx, t, p, r.state)
	cs := kubeClient(t, r.state)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"node-0001", "node-0002", "node-0004"}) {
		t.Errorf("nodes after --nodes=2: %v, want node-0001, node-0002 and the user's node-0004", names)
	}
	out := userCLI(t, r, "instances", "list")
	states := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 {
			states[f[1]] = append(states[f[1]], f[2])
		}
	}
	if slices.ContainsFunc(states["node-0003"], func(s string) bool { return s != "terminated" }) {
		t.Errorf("the sandbox's instance node-0003 still live after --nodes=2:\n%s", out)
	}
	if !slices.Contains(states["node-0004"], "running") {
		t.Errorf("the user's instance node-0004 was removed by --nodes=2:\n%s", out)
	}
	stopAndCheck(t, p, r)
}
