package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
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
	"k8s.io/client-go/rest"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/sandbox"
	"github.com/stratus-ccm/stratus/pkg/localcluster/realnode"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestSandboxRealNodes: `stratus sandbox --real-nodes 2` beside kwok nodes.
// Stratus initializes the real nodes; hello-real answers from real pods
// through its load balancer; kube-controller-manager finishes a namespace
// deletion; a pod finds hello-real by name through the cluster DNS; a
// stopped instance's kubelet stops and its node is tainted shutdown; after
// SIGTERM nothing of the real nodes is left. The next runs take another
// slot of the machine, so their real node has a new address and instance.
func TestSandboxRealNodes(t *testing.T) {
	testbed.RequireBinaries(t, "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd", "images/demo.tar", "images/coredns.tar")
	r := newSandboxRun(t)
	p := r.start(t, "sandbox.log", "--nodes=2", "--real-nodes=2")
	ctx := testbed.Context(t, 8*time.Minute)
	waitReady(ctx, t, p, r.state)
	cs := kubeClient(t, r.state)

	providerIDs := map[string]string{}
	for _, name := range []string{"real-01", "real-02"} {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Spec.ProviderID == "" || hasTaintKey(n, cloudproviderapi.TaintExternalCloudProvider) || n.Labels[sandbox.RealNodeLabel] != "true" {
			t.Errorf("real node %s: providerID %q, taints %v, labels %v", name, n.Spec.ProviderID, n.Spec.Taints, n.Labels)
		}
		providerIDs[name] = n.Spec.ProviderID
	}
	svc, err := cs.CoreV1().Services("default").Get(ctx, sandbox.DemoRealService, metav1.GetOptions{})
	if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("%s: %v %+v", sandbox.DemoRealService, err, svc)
	}
	line, err := sandbox.Probe(ctx, svc.Status.LoadBalancer.Ingress[0].IP, 80)
	if err != nil || !strings.HasPrefix(line, "hello from pod "+sandbox.DemoRealService) {
		t.Errorf("%s answered %q, %v; want a real pod's greeting", sandbox.DemoRealService, line, err)
	}

	checkClusterDNS(ctx, t, cs)

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("a deleted namespace never went (no namespace controller?): %v", err)
	}

	userCLI(t, r, "instances", "stop", "real-02")
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "real-02", metav1.GetOptions{})
		return err == nil && hasTaintKey(n, cloudproviderapi.TaintNodeShutdown), nil
	})
	if err != nil {
		t.Errorf("the stopped real node was never tainted shutdown: %v", err)
	}

	stopAndCheck(t, p, r)
	checkNoRealNodes(t, p, "SIGTERM")
	holdSlot(ctx, t, r, p)
	checkKilledRealNodesCleaned(ctx, t, r, providerIDs["real-01"])
}

// holdSlot takes the real-node slot p's run took, until the test ends, so
// that the next run of the same state takes another: its real node's
// address changes, its instance is replaced, and its Node of the last run
// names an instance that is gone. Slots below it that are free are taken
// on the way and held too, since a run takes the lowest free slot.
//
// Another test's cluster may take that slot first (tests of other packages
// run beside this one); then the slots taken on the way are given back and
// it tries again until that cluster lets the slot go.
func holdSlot(ctx context.Context, t *testing.T, r sandboxRun, p *testbed.Process) {
	t.Helper()
	want, _ := takenSlot(t, readLog(t, p))
	creds := func(string, ...string) (*rest.Config, error) { return nil, errors.New("holds a slot only") }
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var held []*realnode.Cluster
		got := false
		for range 64 {
			c, err := realnode.Start(ctx, realnode.Config{BinDir: r.binDir, APIServerPort: r.ports[0], Credentials: creds})
			if err != nil {
				break // no free slot below: the one wanted is another's
			}
			held = append(held, c)
			if c.Name() == want {
				got = true
				break
			}
			if slotIndex(c.Name()) > slotIndex(want) {
				break // the one wanted is another's
			}
		}
		if got {
			for _, c := range held {
				t.Cleanup(func() {
					if err := c.Stop(context.Background()); err != nil {
						t.Errorf("release real-node slot %s: %v", c.Name(), err)
					}
				})
			}
			return
		}
		for _, c := range held {
			if err := c.Stop(ctx); err != nil {
				t.Errorf("release real-node slot %s: %v", c.Name(), err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot %s was never free to hold", want)
		}
		time.Sleep(time.Second)
	}
}

func slotIndex(name string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "stratus-rn"))
	return i
}

// checkClusterDNS: a pod on real-01 with the kubelet's DNS settings (the
// default dnsPolicy, ClusterFirst) reaches hello-real by its short name,
// which only kube-dns resolves, through the search path the kubelet wrote.
func checkClusterDNS(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-check", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "real-01", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "get", Image: "stratus.local/demo:v1", ImagePullPolicy: corev1.PullNever,
				Args: []string{"-get", "http://" + sandbox.DemoRealService + "/", "-want", "hello from pod " + sandbox.DemoRealService, "-timeout", "60s"}}}},
	}
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	waitCond(ctx, t, "the DNS check pod to finish", 2*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil {
			phase = p.Status.Phase
		}
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	if phase != corev1.PodSucceeded {
		logs, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		t.Errorf("a pod could not reach %s by name through kube-dns: %s (log: %s, %v)", sandbox.DemoRealService, phase, logs, err)
	}
}

// checkNoRealNodes looks at the slot the sandbox took, which its log
// names: other clusters on the machine may hold other slots meanwhile.
func checkNoRealNodes(t *testing.T, p *testbed.Process, after string) {
	t.Helper()
	b := readLog(t, p)
	slot, index := takenSlot(t, b)
	ns, _ := filepath.Glob("/run/netns/" + slot + "-*")
	// Another test's cluster may hold the slot by now (its lock file names
	// that cluster's directory): its namespaces are its own, all but the
	// sandbox's nodes' (real-NN), whose names no other test uses.
	lock, _ := os.ReadFile(filepath.Join(realnode.LockDir, "slot-"+index+".lock"))
	if holder := strings.TrimSpace(string(lock)); holder != "" && holder != filepath.Join(realnode.DefaultRoot, "slot-"+index) {
		ns = slices.DeleteFunc(ns, func(n string) bool { return !strings.HasPrefix(filepath.Base(n), slot+"-real-0") })
	}
	if len(ns) > 0 {
		t.Errorf("real nodes' namespaces left after %s: %v", after, ns)
	}
	if left := leftovers(realnode.DefaultRoot + "/slot-" + index + "/"); len(left) > 0 {
		t.Errorf("real nodes' processes left after %s: %v", after, left)
	}
	if strings.Contains(string(b), "stopping the real nodes:") {
		t.Errorf("stopping the real nodes reported an error:\n%s", b)
	}
}

// readLog is the sandbox's log so far.
func readLog(t *testing.T, p *testbed.Process) []byte {
	t.Helper()
	b, err := os.ReadFile(p.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// takenSlot is the name and index of the real-node slot the sandbox's log
// names.
func takenSlot(t *testing.T, b []byte) (name, index string) {
	t.Helper()
	m := slotTaken.FindAllStringSubmatch(string(b), -1)
	if len(m) == 0 {
		t.Fatalf("the sandbox's log names no real-node slot:\n%s", b)
	}
	return m[len(m)-1][1], m[len(m)-1][2]
}

// slotTaken is the log line of realnode.Start naming the slot taken.
var slotTaken = regexp.MustCompile(`"Real-node slot taken" slot="(stratus-rn([0-9]+))"`)

// checkKilledRealNodesCleaned: a sandbox killed with SIGKILL leaves its
// real node's shim, container and namespace; its next start removes them
// before it makes its own. The first of these runs resumes a run that had
// another slot (holdSlot): its real-01 joins afresh with a new instance.
func checkKilledRealNodesCleaned(ctx context.Context, t *testing.T, r sandboxRun, oldProviderID string) {
	t.Helper()
	// Each run gets fresh ports: a stopped or killed run's may still be
	// taken for a while.
	r.ports = freshPorts(t)
	// With the demo: hello-real's pod gives the node a shim and a container.
	p := r.start(t, "killed.log", "--nodes=1", "--real-nodes=1")
	waitReady(ctx, t, p, r.state)
	n, err := kubeClient(t, r.state).CoreV1().Nodes().Get(ctx, "real-01", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("real-01 after a run in another slot: %v", err)
	}
	if n.Spec.ProviderID == "" || n.Spec.ProviderID == oldProviderID || hasTaintKey(n, cloudproviderapi.TaintExternalCloudProvider) {
		t.Errorf("real-01 in another slot: providerID %q (last run's %q), taints %v; want a new instance's, initialized", n.Spec.ProviderID, oldProviderID, n.Spec.Taints)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = p.Wait(time.Minute)
	// Its children die with it (not the shims, which containerd detached).
	waitCond(ctx, t, "the children of a killed sandbox to end", time.Minute, func(context.Context) (bool, error) {
		return len(leftovers(r.state)) == 0, nil
	})
	netns, _ := filepath.Glob("/run/netns/stratus-rn*-real-01")
	shims := leftovers(realnode.DefaultRoot + "/")
	if len(netns) != 1 || len(shims) == 0 {
		t.Fatalf("a SIGKILLed sandbox should leave its real node's namespace and shims; found %v and %v", netns, shims)
	}
	// Holding the killed run's namespace open keeps its inode number
	// from being reused by the next run's namespace of the same name.
	old, err := os.Open(netns[0])
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = old.Close() }()
	var before syscall.Stat_t
	if err := syscall.Fstat(int(old.Fd()), &before); err != nil {
		t.Fatal(err)
	}
	// The killed run's ready marker would pass for the next run's.
	if err := os.Remove(filepath.Join(r.state, "ready")); err != nil {
		t.Fatal(err)
	}
	r.ports = freshPorts(t)
	p = r.start(t, "after-kill.log", "--nodes=1", "--real-nodes=1", "--no-demo")
	waitReady(ctx, t, p, r.state)
	for _, l := range shims {
		pid, _, _ := strings.Cut(l, ":")
		if slices.Contains(leftovers(realnode.DefaultRoot+"/"), l) {
			t.Errorf("process %s of the killed sandbox still runs after the next start", pid)
		}
	}
	var after syscall.Stat_t
	for _, m := range mustGlob("/run/netns/stratus-rn*-real-01") {
		if err := syscall.Stat(m, &after); err == nil && after.Ino == before.Ino && after.Dev == before.Dev {
			t.Errorf("the killed sandbox's namespace %s is still there after the next start", m)
		}
	}
	stopAndCheck(t, p, r)
	checkNoRealNodes(t, p, "SIGTERM after a SIGKILL")
}

func freshPorts(t *testing.T) []int {
	var ports []int
	for range 4 {
		ports = append(ports, testbed.FreePort(t))
	}
	return ports
}

func mustGlob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}
