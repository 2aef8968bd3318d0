package realnode_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	lcapi "github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/dataplane"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/localcluster/realnode"
)

// startControllers runs kube-controller-manager and kube-scheduler as the
// sandbox does, until the test ends.
func startControllers(t *testing.T, cp *localcluster.ControlPlane, bin, dir string) {
	t.Helper()
	for _, c := range []struct {
		binary, user string
		args         func(kubeconfig string, port int) []string
	}{
		{"kube-controller-manager", localcluster.ControllerManagerUser, cp.ControllerManagerArgs},
		{"kube-scheduler", localcluster.SchedulerUser, localcluster.SchedulerArgs},
	} {
		cfg, err := cp.UserConfig(c.user)
		if err != nil {
			t.Fatal(err)
		}
		kc := filepath.Join(dir, c.binary+".kubeconfig")
		if err := localcluster.WriteKubeconfig(cfg, kc); err != nil {
			t.Fatal(err)
		}
		log, err := os.Create(filepath.Join(dir, c.binary+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, c.binary), c.args(kc, freePort(t))...)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = log.Close() })
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// checkLoadBalancer: localcloud's data plane forwards a VIP of the
// cluster's pool to the real nodes' node port, where kube-proxy takes
// the connection to the pod; with externalTrafficPolicy Local the HTTP
// health check of the health check node port (kube-proxy answers 503 on
// the node without the pod) keeps the other node out. The VIP answers the
// machine and a pod on the other node alike: nothing but the data plane
// knows it (the Service has no ingress status for kube-proxy to take
// over), so the pod's connection crosses the node's link to the machine.
func checkLoadBalancer(ctx context.Context, t *testing.T, cs kubernetes.Interface, c *realnode.Cluster, withPod *realnode.Node) {
	other, err := c.AddNode(ctx, "real-1")
	if err != nil {
		t.Fatal(err)
	}
	waitNode(ctx, t, cs, other)
	setPodCIDR(ctx, t, cs, other.Name, "10.244.8.0/24")
	waitReady(ctx, t, cs, other)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-local", Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector: map[string]string{"app": "demo"},
			Ports:    []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	svc, err = cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodePort, hcPort := int(svc.Spec.Ports[0].NodePort), int(svc.Spec.HealthCheckNodePort)
	// kube-proxy's health check node port is the ground truth the load
	// balancer goes by.
	waitHealth(ctx, t, withPod.IP, hcPort, http.StatusOK)
	waitHealth(ctx, t, other.IP, hcPort, http.StatusServiceUnavailable)

	// The cloud's side of the slot: load balancers that forward packets
	// in the slot's load-balancer namespace.
	_, lctx := ktesting.NewTestContext(t)
	m, err := dataplane.NewManagerIn(lctx, dataplane.Options{Netns: c.LoadBalancerNetns(), PassThrough: true, TargetNetwork: c.Subnet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pool := c.VIPPool()
	if !c.Subnet().Contains(pool.Addr()) || pool.Contains(withPod.IP) || pool.Contains(other.IP) {
		t.Fatalf("VIP pool %s: want it inside the cluster's subnet %s, apart from the nodes %s and %s", pool, c.Subnet(), withPod.IP, other.IP)
	}
	vip := pool.Addr().Next()
	spec := dataplane.Spec{
		ID: "lb-real", VIP: vip,
		Listeners: []lcapi.Listener{{Protocol: lcapi.ProtocolTCP, Port: 80, NodePort: nodePort}},
		Backends: []dataplane.Backend{{ID: withPod.Name, Address: withPod.IP, Up: true},
			{ID: other.Name, Address: other.IP, Up: true}},
		HealthCheck: lcapi.HealthCheck{Port: hcPort, Path: "/healthz", IntervalMs: 200, TimeoutMs: 1000,
			HealthyThreshold: 1, UnhealthyThreshold: 1},
	}
	if err := m.Apply(spec); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("hello from pod demo on node %s\n", withPod.Name)
	addr := net.JoinHostPort(vip.String(), "80")
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for range 10 {
			if line, err := dialLineOnce(ctx, addr); err != nil || line != want {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the load balancer %s never answered %q ten times in a row: %v", addr, want, err)
	}
	// The pod sees the client on the machine as itself: externalTrafficPolicy
	// Local keeps kube-proxy from SNATing, and the load balancer forwards.
	if got, err := getBody(ctx, "http://"+addr+"/clientip"); err != nil || got != c.ClientAddr().String()+"\n" {
		t.Errorf("the pod behind the load balancer saw the machine's client as %q (%v), want %s", got, err, c.ClientAddr())
	}
	if got := runClientPod(ctx, t, cs, "client", other.Name, "http://"+addr+"/"); got != want {
		t.Errorf("a pod on %s got %q from the load balancer, want %q", other.Name, got, want)
	}

	// With PROXY protocol the load balancer is a proxy in the namespace:
	// the connection comes from it, the client's address in the header,
	// which the demo reads.
	proxied := spec
	proxied.ID, proxied.VIP, proxied.ProxyProtocol = "lb-real-pp", vip.Next(), lcapi.ProxyProtocolV2
	if err := m.Apply(proxied); err != nil {
		t.Fatal(err)
	}
	ppURL := "http://" + net.JoinHostPort(proxied.VIP.String(), "80") + "/clientip"
	var got string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = getBody(ctx, ppURL)
		return err == nil && got == c.ClientAddr().String()+"\n", nil
	})
	if err != nil {
		t.Errorf("behind PROXY protocol v2 the pod read the client as %q, want %s", got, c.ClientAddr())
	}
}

func getBody(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// runClientPod runs the demo image's client mode on node: it GETs url
// until the demo's greeting comes back, and its log is the body.
func runClientPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, node, url string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeSelector:  map[string]string{corev1.LabelHostname: node},
			Tolerations:   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "get", Image: "stratus.local/demo:v1", ImagePullPolicy: corev1.PullNever,
				Args: []string{"-get", url, "-timeout", "60s"}}},
		},
	}
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = got.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, lerr := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || phase != corev1.PodSucceeded {
		t.Fatalf("client pod on %s: phase %q (%v); log: %s %v", node, phase, err, logs, lerr)
	}
	if lerr != nil {
		t.Fatalf("client pod log: %v", lerr)
	}
	return string(logs)
}

func dialLineOnce(ctx context.Context, addr string) (string, error) {
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

func waitHealth(ctx context.Context, t *testing.T, ip netip.Addr, port, want int) {
	t.Helper()
	url := "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(port)) + "/healthz"
	got := 0
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		got = resp.StatusCode
		return got == want, nil
	})
	if err != nil {
		t.Fatalf("GET %s: %d, want %d: %v", url, got, want, err)
	}
}
