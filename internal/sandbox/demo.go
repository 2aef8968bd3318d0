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

	lcapi "github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// DemoService is the name of the demo Service in the default namespace;
// DemoLocalService is its twin with externalTrafficPolicy Local, whose
// stand-in pods run on only some nodes (see PodNodes).
const (
	DemoService      = "hello"
	DemoLocalService = "hello-local"
)

// demo creates the demo Services and waits until their load balancers
// answer through their VIPs.
func (s *sandbox) demo(ctx context.Context) error {
	hello := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DemoService, Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "echo", Protocol: corev1.ProtocolUDP, Port: 7, TargetPort: intstr.FromInt32(7)},
			},
		},
	}
	local := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DemoLocalService, Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if s.o.Nodes == 0 {
		// No kwok node, no stand-in: the demo image on the real nodes
		// serves them (HTTP, the greeting, the UDP echo), and hello-local's
		// pods see the client's address (GET /clientip).
		if err := s.ensureDemoDeployment(ctx); err != nil {
			return err
		}
		hello.Spec.Selector, local.Spec.Selector = demoRealLabels(), demoRealLabels()
	}
	for _, svc := range []*corev1.Service{hello, local} {
		if _, err := s.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("sandbox: create demo Service %s: %w", svc.Name, err)
		}
	}
	if s.o.NoCCM {
		// Their load balancers come once the user's controller manager runs.
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.ReadyTimeout)
	defer cancel()
	for _, name := range []string{DemoService, DemoLocalService} {
		vips, err := s.waitAnswer(ctx, name)
		if err != nil {
			return err
		}
		if name == DemoService {
			s.demoVIPs = vips
		}
	}
	return nil
}

// waitAnswer waits until the Service's VIP answers on port 80, saying so
// at once when the cloud cannot bind the load balancer's VIP.
func (s *sandbox) waitAnswer(ctx context.Context, name string) ([]string, error) {
	var vips []string
	reported := ""
	err := waitFor(ctx, time.Second, "the load balancer of Service "+name+" to answer", func(ctx context.Context) (bool, error) {
		if err := s.childrenAlive(); err != nil {
			return false, err
		}
		if reason := s.lbError(ctx, name); reason != "" {
			if reason != reported {
				reported = reason
				fmt.Fprintf(s.out, "            the load balancer of %s is in error: %s\n"+
					"            (another sandbox on the same VIP pool? give this one its own with --vip-pool; localcloud retries every 5s)\n", name, reason)
			}
			return false, fmt.Errorf("its load balancer is in error: %s", reason)
		}
		got, err := s.kube.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(got.Status.LoadBalancer.Ingress) == 0 || got.Status.LoadBalancer.Ingress[0].IP == "" {
			return false, nil
		}
		if len(got.Status.LoadBalancer.Ingress) < len(got.Spec.IPFamilies) && policyWantsAll(got) {
			// One ingress per family: the second comes with the same
			// ensure, so a partial status is not the end.
			return false, nil
		}
		vips = vips[:0]
		// Every address of the load balancer answers, one per family of a
		// dual-stack Service.
		for _, in := range got.Status.LoadBalancer.Ingress {
			line, err := Probe(ctx, in.IP, 80)
			if err != nil {
				return false, err
			}
			fmt.Fprintf(s.out, "            %s %s answered: %s", name, net.JoinHostPort(in.IP, "80"), line)
			vips = append(vips, in.IP)
		}
		return true, nil
	})
	return vips, err
}

// Probe connects to ip:port and returns the responder's greeting.
func Probe(ctx context.Context, ip string, port int) (string, error) {
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
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

// lbError returns why the load balancer of the demo Service name is in
// error, or "".
func (s *sandbox) lbError(ctx context.Context, name string) string {
	lbs, err := s.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: clusterName,
		Tags: map[string]string{lcapi.TagServiceNamespace: metav1.NamespaceDefault, lcapi.TagServiceName: name}})
	if err != nil {
		return ""
	}
	for _, lb := range lbs {
		if lb.Status == lcapi.LBError {
			return lb.StatusMessage
		}
	}
	return ""
}

// policyWantsAll reports whether the Service asks for every family of
// spec.ipFamilies (not PreferDualStack, which a cloud may serve in part).
func policyWantsAll(svc *corev1.Service) bool {
	return svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyPreferDualStack
}
