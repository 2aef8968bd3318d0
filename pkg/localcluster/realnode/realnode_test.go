package realnode_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/localcluster/realnode"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const (
	uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"
	providedIPKey      = "alpha.kubernetes.io/provided-node-ip"
)

// realNodeBinaries are what a real node needs from bin/.
var realNodeBinaries = []string{"etcd", "kube-apiserver", "kubelet", "kube-proxy", "kube-controller-manager", "kube-scheduler", "containerd",
	"containerd-shim-runc-v2", "ctr", "cni/bridge", "cni/host-local", "images/pause.tar", "images/demo.tar"}

// A cluster whose holder was SIGKILLed is cleaned by the next Start. Then a
// real kubelet with --cloud-provider=external registers its Node tainted
// and annotated with its --node-ip; once the node has a pod CIDR (what
// node IPAM gives it) it is Ready and runs a pod that answers on its pod
// IP from the node; kube-proxy's health check answers on the node's
// address; after Stop nothing of the cluster is left on the machine.
func TestRealNode(t *testing.T) {
	bin := testbed.RequireBinaries(t, realNodeBinaries...)
	ctx := testbed.Context(t, 5*time.Minute)
	dir := t.TempDir()
	cp := &localcluster.ControlPlane{BinDir: bin, EtcdDataDir: filepath.Join(dir, "etcd"), CertDir: filepath.Join(dir, "pki"),
		APIServerArgs: []string{"--authorization-mode=Node", "--enable-admission-plugins=NodeRestriction",
			"--kubelet-preferred-address-types=InternalIP"}}
	apiLog, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	cp.APIServerLog = apiLog
	admin, err := cp.Start(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, tail(apiLog.Name()))
	}
	t.Cleanup(cp.Stop)
	cs := kubernetes.NewForConfigOrDie(admin)
	startControllers(t, cp, bin, dir)

	root := filepath.Join(dir, "nodes")

	// A holder killed with SIGKILL leaves its node behind (its shims and
	// containers outlive it); the next Start cleans it.
	child, childSlot := startChild(t, cp, bin, root, "killed-0")
	killed := &realnode.Node{Name: "killed-0"}
	waitNodeNamed(ctx, t, cs, killed.Name)
	setPodCIDR(ctx, t, cs, killed.Name, "10.244.6.0/24")
	waitReadyNamed(ctx, t, cs, killed.Name)
	runDemoPod(ctx, t, cs, "victim", killed.Name)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	childFiles := existing(runtimeFiles(root))
	if len(childFiles) == 0 {
		t.Fatal("a killed holder with a running pod should leave its shim's socket")
	}
	if left := machineLeftovers(t, childSlot, root); !containsPrefix(left, "process ") || !containsPrefix(left, "/run/netns/") {
		t.Fatalf("a killed holder should leave its shims and namespace; found %v", left)
	}

	c, err := realnode.Start(ctx, realnode.Config{BinDir: bin, APIServerPort: cp.APIServerPort, Credentials: cp.UserConfig, Root: root,
		LoadBalancerNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop(context.Background())
		}
	})
	left := machineLeftovers(t, childSlot, root)
	if c.Name() == childSlot {
		// The new holder's own bridge and load-balancer network, under
		// the same names: the killed holder's were removed before them
		// (adding a namespace or link that exists fails the Start).
		left = slices.DeleteFunc(left, func(l string) bool {
			return strings.HasPrefix(l, "link ") && (strings.HasSuffix(l, "-br") || strings.HasSuffix(l, "-lb") || strings.HasSuffix(l, "-cl")) ||
				strings.HasSuffix(l, "-cloud_lb")
		})
	}
	if len(left) > 0 {
		t.Errorf("left by the killed holder after the next Start: %v", left)
	}
	if left := existing(childFiles); len(left) > 0 {
		t.Errorf("the killed holder's shim sockets and CNI cache after the next Start: %v", left)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, killed.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}

	n, err := c.AddNode(ctx, "real-0")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Subnet().Contains(n.IP) {
		t.Fatalf("node IP %s outside the cluster's subnet %s", n.IP, c.Subnet())
	}

	node := waitNode(ctx, t, cs, n)
	if !hasTaint(node, uninitializedTaint) {
		t.Errorf("node registered without the %s taint: %v", uninitializedTaint, node.Spec.Taints)
	}
	if got := node.Annotations[providedIPKey]; got != n.IP.String() {
		t.Errorf("annotation %s = %q, want %s", providedIPKey, got, n.IP)
	}

	// Node IPAM's part: without a pod CIDR containerd has no CNI
	// configuration and the node stays NotReady.
	setPodCIDR(ctx, t, cs, n.Name, "10.244.7.0/24")
	waitReady(ctx, t, cs, n)

	pod := runDemoPod(ctx, t, cs, "demo", n.Name)
	if !strings.HasPrefix(pod.Status.PodIP, "10.244.7.") {
		t.Errorf("pod IP %s not from the node's pod CIDR 10.244.7.0/24", pod.Status.PodIP)
	}
	line := dialLine(ctx, t, n, pod.Status.PodIP+":8080")
	if want := fmt.Sprintf("hello from pod %s on node %s\n", pod.Name, n.Name); line != want {
		t.Errorf("pod answered %q, want %q", line, want)
	}
	if code := httpStatus(ctx, t, "http://"+n.IP.String()+":10256/healthz"); code != http.StatusOK {
		t.Errorf("kube-proxy healthz on the node's address: %d, want 200", code)
	}
	checkLoadBalancer(ctx, t, cs, c, n)

	ours := runtimeFiles(root)
	stopped = true
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if left := machineLeftovers(t, c.Name(), root); len(left) > 0 {
		t.Errorf("left on the machine after Stop: %v", left)
	}
	if left := existing(ours); len(left) > 0 {
		t.Errorf("shim sockets and CNI cache left after Stop: %v", left)
	}
}

func setPodCIDR(ctx context.Context, t *testing.T, cs kubernetes.Interface, node, cidr string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"spec":{"podCIDR":%q,"podCIDRs":[%q]}}`, cidr, cidr))
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitNodeNamed(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("node %s never registered: %v", name, err)
	}
}

func waitReadyNamed(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if err := pollReady(ctx, cs, name); err != nil {
		t.Fatalf("node %s never Ready: %v", name, err)
	}
}

func pollReady(ctx context.Context, cs kubernetes.Interface, name string) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

func waitNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *realnode.Node) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		node, err = cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("node %s never registered: %v\n%s", n.Name, err, tail(n.Log("kubelet")))
	}
	return node
}

func waitReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *realnode.Node) {
	t.Helper()
	if err := pollReady(ctx, cs, n.Name); err != nil {
		t.Fatalf("node %s never Ready: %v\n%s", n.Name, err, tail(n.Log("kubelet")))
	}
}

// runDemoPod runs the demo image on node, where kube-scheduler places it
// by the node's hostname label; it tolerates the node's taints (no CCM
// lifts the uninitialized taint here).
func runDemoPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, node string) *corev1.Pod {
	t.Helper()
	envFrom := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: node},
			Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "demo", Image: "stratus.local/demo:v1", ImagePullPolicy: corev1.PullNever,
				Env: []corev1.EnvVar{envFrom("POD_NAME", "metadata.name"), envFrom("NODE_NAME", "spec.nodeName")},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning && got.Status.PodIP != "", nil
	})
	if err != nil {
		t.Fatalf("pod never running: %v; status %+v", err, got.Status)
	}
	return got
}

func dialLine(ctx context.Context, t *testing.T, n *realnode.Node, addr string) string {
	t.Helper()
	var line string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := n.Dial(ctx, "tcp", addr)
		if err != nil {
			return false, nil
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		line, err = bufio.NewReader(c).ReadString('\n')
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no answer from %s inside node %s: %v", addr, n.Name, err)
	}
	return line
}

func httpStatus(ctx context.Context, t *testing.T, url string) int {
	t.Helper()
	code := 0
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		code = resp.StatusCode
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Logf("GET %s: last status %d: %v", url, code, err)
	}
	return code
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// machineLeftovers looks, independently of the package's own cleanup,
// for anything named after the cluster: namespaces, links, cgroups,
// mounts under its root and processes whose command line names the root.
func machineLeftovers(t *testing.T, name, root string) []string {
	t.Helper()
	var left []string
	if m, _ := filepath.Glob("/run/netns/" + name + "-*"); len(m) > 0 {
		left = append(left, m...)
	}
	links, _ := os.ReadDir("/sys/class/net")
	linkPrefix := "strn" + strings.TrimPrefix(name, "stratus-rn") + "-"
	for _, l := range links {
		if strings.HasPrefix(l.Name(), linkPrefix) {
			left = append(left, "link "+l.Name())
		}
	}
	if m, _ := filepath.Glob("/sys/fs/cgroup/*/" + name); len(m) > 0 {
		left = append(left, m...)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 4 && (strings.HasPrefix(f[4], root+"/") || strings.HasPrefix(f[4], "/run/netns/"+name+"-")) {
			left = append(left, "mount "+f[4])
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), root+"/") && p.Name() != fmt.Sprint(os.Getpid()) {
			left = append(left, "process "+p.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return left
}

func containsPrefix(list []string, prefix string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// runtimeFiles names the files the nodes under root put outside it, per
// task of their containerd: the shim's socket, named by containerd after
// the hash of its own socket, namespace and task id, and the CNI result
// cache entries, named after the pod sandbox's id.
func runtimeFiles(root string) []string {
	tasks, _ := filepath.Glob(filepath.Join(root, "slot-*", "*", "containerd", "state", "io.containerd.runtime.v2.task", "k8s.io", "*"))
	var out []string
	for _, task := range tasks {
		nodeDir := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(task)))))
		id := filepath.Base(task)
		sum := sha256.Sum256([]byte(filepath.Join(nodeDir, "containerd.sock", "k8s.io", id)))
		out = append(out, "/run/containerd/s/"+hex.EncodeToString(sum[:]))
		cache, _ := filepath.Glob("/var/lib/cni/results/*-" + id + "-*")
		out = append(out, cache...)
	}
	return out
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return path + ":\n" + string(b)
}
