package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// DemoDirectService is the demo Service without node ports
// (allocateLoadBalancerNodePorts: false): its load balancer targets the
// demo pods' addresses (endpoint targets), so it needs the slot's
// load-balancer namespace, which reaches pod CIDRs through localcloud's
// route table.
const DemoDirectService = "hello-direct"

// endpointTargets reports whether the sandbox's load balancers can target
// pod addresses: real nodes only, with the slot's load-balancer namespace.
func (s *sandbox) endpointTargets() bool {
	return s.real != nil && s.real.LoadBalancerNetns() != ""
}

// demoDirect creates hello-direct, waits for its load balancer to answer
// from a real pod on every ingress, and checks that the pod sees the
// machine's client address, as a load balancer straight to pods keeps it.
func (s *sandbox) demoDirect(ctx context.Context) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DemoDirectService, Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: demoRealLabels(),
			AllocateLoadBalancerNodePorts: ptr.To(false),
			Ports:                         []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if s.dual {
		svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}
	if _, err := s.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sandbox: create demo Service %s: %w", svc.Name, err)
	}
	if s.o.NoCCM {
		return nil
	}
	vips, err := s.waitAnswer(ctx, DemoDirectService)
	if err != nil {
		return err
	}
	want := map[bool]string{false: s.real.ClientAddr().String()}
	if a := s.real.ClientAddr6(); a.IsValid() {
		want[true] = a.String()
	}
	for _, vip := range vips {
		six := strings.Contains(vip, ":")
		got, err := clientIP(ctx, vip, 80)
		if err != nil {
			return fmt.Errorf("sandbox: %s: %w", DemoDirectService, err)
		}
		if got != want[six] {
			return fmt.Errorf("sandbox: %s's pod saw the client as %s, want the machine's client address %s", DemoDirectService, got, want[six])
		}
		fmt.Fprintf(s.out, "            %s %s: the pod sees the client as %s\n", DemoDirectService, net.JoinHostPort(vip, "80"), got)
	}
	return nil
}

// clientIP asks the demo image's GET /clientip through ip:port.
func clientIP(ctx context.Context, ip string, port int) (string, error) {
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		return "", fmt.Errorf("GET /clientip from %s:%d: %w", ip, port, err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := fmt.Fprintf(c, "GET /clientip HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", ip); err != nil {
		return "", fmt.Errorf("GET /clientip from %s:%d: %w", ip, port, err)
	}
	r := bufio.NewReader(c)
	body := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		body = line
	}
	if body == "" {
		return "", fmt.Errorf("GET /clientip from %s:%d: no answer", ip, port)
	}
	return strings.TrimSpace(body), nil
}
