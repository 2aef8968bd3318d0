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
)

// DemoService is the name of the demo Service in the default namespace.
const DemoService = "hello"

// demo creates the demo Service (TCP 80 and UDP 7) and waits until its
// load balancer answers through the VIP.
func (s *sandbox) demo(ctx context.Context) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DemoService, Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "echo", Protocol: corev1.ProtocolUDP, Port: 7, TargetPort: intstr.FromInt32(7)},
			},
		},
	}
	if _, err := s.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sandbox: create demo Service: %w", err)
	}
	if s.o.NoCCM {
		// Its load balancer comes once the user's controller manager runs.
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.ReadyTimeout)
	defer cancel()
	return waitFor(ctx, time.Second, "the demo Service's load balancer to answer", func(ctx context.Context) (bool, error) {
		if err := s.childrenAlive(); err != nil {
			return false, err
		}
		got, err := s.kube.CoreV1().Services(svc.Namespace).Get(ctx, DemoService, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(got.Status.LoadBalancer.Ingress) == 0 || got.Status.LoadBalancer.Ingress[0].IP == "" {
			return false, nil
		}
		vip := got.Status.LoadBalancer.Ingress[0].IP
		line, err := Probe(vip, 80)
		if err != nil {
			return false, err
		}
		s.demoVIP = vip
		fmt.Fprintf(s.out, "            %s:80 answered: %s", vip, line)
		return true, nil
	})
}

// Probe connects to ip:port and returns the responder's greeting.
func Probe(ip string, port int) (string, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, fmt.Sprint(port)), 2*time.Second)
	if err != nil {
		return "", fmt.Errorf("probe %s:%d: %w", ip, port, err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("probe %s:%d: %w", ip, port, err)
	}
	if !strings.HasPrefix(line, "hello from ") {
		return "", fmt.Errorf("probe %s:%d: unexpected answer %q", ip, port, line)
	}
	return line, nil
}
