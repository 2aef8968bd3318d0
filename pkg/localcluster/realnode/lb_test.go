package realnode_test

import (
	"context"
	"fmt"
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

// checkLoadBalancer: localcloud's data plane forwards a VIP on the
// machine's loopback to the real nodes' node port, where kube-proxy takes
// the connection to the pod; with externalTrafficPolicy Local the HTTP
// health check of the health check node port (kube-proxy answers 503 on
// the node without the pod) keeps the other node out.
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

	_, lctx := ktesting.NewTestContext(t)
	m := dataplane.NewManager(lctx)
	defer m.Close()
	vip := netip.MustParseAddr(fmt.Sprintf("127.%d.%d.%d", 200, os.Getpid()%250, 1+time.Now().Nanosecond()%250))
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
