package localcloud_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

const svcPort = 8080

func service(nodePort int, protocol corev1.Protocol) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID("0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"),
			Annotations: map[string]string{
				lcprovider.AnnotationHealthCheckInterval: "100ms",
				lcprovider.AnnotationUnhealthyThreshold:  "1",
			}},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: protocol, Port: svcPort, NodePort: int32(nodePort)}},
		},
	}
}

// greeter accepts TCP connections on ip:port and writes its name.
func greeter(t *testing.T, ip string, port int, name string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, name+"\n")
			_ = c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func greet(t *testing.T, vip string) string {
	t.Helper()
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(t.Context(), "tcp", net.JoinHostPort(vip, strconv.Itoa(svcPort)))
	if err != nil {
		t.Fatalf("dial %s: %v", vip, err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read from %s: %v", vip, err)
	}
	return strings.TrimSpace(line)
}

func TestLoadBalancerThroughInterface(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 300*time.Millisecond)
	a, b := e.instance(t, "a"), e.instance(t, "b")
	port := greeter(t, a.Addresses.Internal, 0, "a")
	greeter(t, b.Addresses.Internal, port, "b")
	nodes := []*corev1.Node{node("a", "localcloud://"+a.ID), node("uninitialized", "")}
	lbs, ok := e.cloud.LoadBalancer()
	if !ok {
		t.Fatal("no LoadBalancer")
	}
	svc := service(port, corev1.ProtocolTCP)
	if name := lbs.GetLoadBalancerName(e.ctx, "kubernetes", svc); name != "a0b1c2d3e4f5061728394a5b6c7d8e9f" {
		t.Fatalf("name %q", name)
	}
	if _, exists, err := lbs.GetLoadBalancer(e.ctx, "kubernetes", svc); exists || err != nil {
		t.Fatalf("before create: exists=%v err=%v", exists, err)
	}
	_, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	var retry *cloudproviderapi.RetryError
	if !errors.As(err, &retry) || retry.RetryAfter() <= 0 {
		t.Fatalf("provisioning: want RetryError, got %v", err)
	}
	// The cloud said when it will be active (300 ms from the create): the
	// controller is asked to look again then, not after a fixed period.
	if d := retry.RetryAfter(); d > 400*time.Millisecond {
		t.Errorf("provisioning for 300ms: asked to retry after %v", d)
	}
	var st *corev1.LoadBalancerStatus
	// Called as the controller calls it: again until the cloud has provisioned it.
	err = wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, 10*time.Second, false, func(ctx context.Context) (bool, error) {
		st, err = lbs.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
		if err != nil && !errors.As(err, &retry) {
			return false, err
		}
		return st != nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st == nil || len(st.Ingress) != 1 || st.Ingress[0].IPMode == nil || *st.Ingress[0].IPMode != corev1.LoadBalancerIPModeVIP {
		t.Fatalf("status %+v", st)
	}
	vip := st.Ingress[0].IP
	if got := e.count(t, "CreateLoadBalancer"); got != 1 {
		t.Fatalf("retries created %d load balancers", got)
	}
	if got := greet(t, vip); got != "a" {
		t.Fatalf("traffic reached %q", got)
	}
	// Node set change: b replaces a.
	if err := lbs.UpdateLoadBalancer(e.ctx, "kubernetes", svc, []*corev1.Node{node("b", "localcloud://"+b.ID)}); err != nil {
		t.Fatal(err)
	}
	if got := greet(t, vip); got != "b" {
		t.Fatalf("after update traffic reached %q", got)
	}
	updates := e.count(t, "UpdateLoadBalancer")
	if err := lbs.UpdateLoadBalancer(e.ctx, "kubernetes", svc, []*corev1.Node{node("b", "localcloud://"+b.ID)}); err != nil {
		t.Fatal(err)
	}
	if got := e.count(t, "UpdateLoadBalancer"); got != updates {
		t.Fatalf("an unchanged node set cost an update call")
	}
	st2, exists, err := lbs.GetLoadBalancer(e.ctx, "kubernetes", svc)
	if !exists || err != nil || st2.Ingress[0].IP != vip {
		t.Fatalf("get: %v %v %+v", exists, err, st2)
	}
	owned, err := e.cloud.(cloud.LoadBalancerLister).ListLoadBalancers(e.ctx, "kubernetes")
	if err != nil || len(owned) != 1 || owned[0].ServiceUID != svc.UID || owned[0].ServiceName != "web" || owned[0].ServiceNamespace != "default" {
		t.Fatalf("lister: %v %+v", err, owned)
	}
	if other, _ := e.cloud.(cloud.LoadBalancerLister).ListLoadBalancers(e.ctx, "other"); len(other) != 0 {
		t.Fatalf("other cluster sees %+v", other)
	}
	for range 2 {
		if err := lbs.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, e, svc)
}

func waitGone(t *testing.T, e *env, svc *corev1.Service) {
	t.Helper()
	lbs, _ := e.cloud.LoadBalancer()
	var last error
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var exists bool
		_, exists, last = lbs.GetLoadBalancer(ctx, "kubernetes", svc)
		return last == nil && !exists, nil
	})
	if err != nil {
		t.Fatalf("load balancer still exists: %v (last answer: %v)", err, last)
	}
}

func TestLoadBalancerUDPAndSourceRanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	a := e.instance(t, "a")
	lbs, _ := e.cloud.LoadBalancer()
	svc := service(31000, corev1.ProtocolUDP)
	svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey] = "10.0.0.0/8, 192.168.0.0/16"
	st, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, []*corev1.Node{node("a", "localcloud://"+a.ID)})
	if err != nil || len(st.Ingress) != 1 {
		t.Fatalf("ensure: %v %+v", err, st)
	}
	got, err := e.admin.ListAllLoadBalancers(e.ctx, client.ListOptions{Cluster: "kubernetes"})
	if err != nil || len(got) != 1 {
		t.Fatal(err)
	}
	lb := got[0]
	if lb.Listeners[0].Protocol != api.ProtocolUDP || strings.Join(lb.SourceRanges, ",") != "10.0.0.0/8,192.168.0.0/16" {
		t.Fatalf("spec %+v", lb.LoadBalancerSpec)
	}
	// The default timeout (2s) shrinks to the 100ms interval asked for.
	if lb.HealthCheck.IntervalMs != 100 || lb.HealthCheck.TimeoutMs != 100 || lb.HealthCheck.UnhealthyThreshold != 1 {
		t.Fatalf("annotations not applied: %+v", lb.HealthCheck)
	}
	// The spec field wins over the annotation.
	svc.Spec.LoadBalancerSourceRanges = []string{"172.16.0.0/12"}
	if err := lbs.UpdateLoadBalancer(e.ctx, "kubernetes", svc, []*corev1.Node{node("a", "localcloud://"+a.ID)}); err != nil {
		t.Fatal(err)
	}
	upd, _ := e.admin.GetLoadBalancer(e.ctx, lb.ID)
	if strings.Join(upd.SourceRanges, ",") != "172.16.0.0/12" {
		t.Fatalf("source ranges %v", upd.SourceRanges)
	}
}

func TestLoadBalancerInvalidInputChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	lbs, _ := e.cloud.LoadBalancer()
	cases := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []string
	}{
		{"sctp", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = corev1.ProtocolSCTP }, []string{"8080", "SCTP"}},
		{"interval", func(s *corev1.Service) { s.Annotations[lcprovider.AnnotationHealthCheckInterval] = "often" }, []string{lcprovider.AnnotationHealthCheckInterval, "often"}},
		{"threshold", func(s *corev1.Service) { s.Annotations[lcprovider.AnnotationHealthyThreshold] = "0" }, []string{lcprovider.AnnotationHealthyThreshold, `"0"`}},
		{"timeout", func(s *corev1.Service) { s.Annotations[lcprovider.AnnotationHealthCheckTimeout] = "-1s" }, []string{lcprovider.AnnotationHealthCheckTimeout}},
		{"ip mode", func(s *corev1.Service) { s.Annotations[lcprovider.AnnotationIPMode] = "Direct" }, []string{lcprovider.AnnotationIPMode, "Direct"}},
		{"proxy protocol", func(s *corev1.Service) { s.Annotations[lcprovider.AnnotationProxyProtocol] = "v3" }, []string{lcprovider.AnnotationProxyProtocol, "v3", "v1 or v2"}},
		{"proxy protocol with ip mode VIP", func(s *corev1.Service) {
			s.Annotations[lcprovider.AnnotationProxyProtocol] = "v2"
			s.Annotations[lcprovider.AnnotationIPMode] = "VIP"
		}, []string{lcprovider.AnnotationIPMode, "VIP", "without the PROXY protocol header"}},
		{"timeout longer than interval", func(s *corev1.Service) { s.Annotations[lcprovider.AnnotationHealthCheckTimeout] = "1s" },
			[]string{lcprovider.AnnotationHealthCheckTimeout + `="1s"`, lcprovider.AnnotationHealthCheckInterval + " (100ms)"}},
		{"timeout longer than default interval", func(s *corev1.Service) {
			delete(s.Annotations, lcprovider.AnnotationHealthCheckInterval)
			s.Annotations[lcprovider.AnnotationHealthCheckTimeout] = "6s"
		}, []string{lcprovider.AnnotationHealthCheckTimeout + `="6s"`, lcprovider.AnnotationHealthCheckInterval + " (5s)"}},
		{"source range", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/33"} }, []string{"10.0.0.0/33"}},
		{"no node port", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 0 }, []string{"node port"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(30000, corev1.ProtocolTCP)
			tc.mutate(svc)
			_, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			// A refused port or protocol is told apart from other refusals,
			// for the Service's LoadBalancerPortsError condition.
			if port := tc.name == "sctp" || tc.name == "no node port"; errors.Is(err, cloud.ErrPortNotSupported) != port {
				t.Errorf("errors.Is(%q, cloud.ErrPortNotSupported) = %t, want %t", err, !port, port)
			}
		})
	}
	if n := e.count(t, "CreateLoadBalancer") + e.count(t, "UpdateLoadBalancer"); n != 0 {
		t.Fatalf("invalid services caused %d cloud writes", n)
	}
}

func TestRoutesThroughInterface(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	e.instance(t, "node-a")
	e.instance(t, "node-b")
	routes, ok := e.cloud.Routes()
	if !ok {
		t.Fatal("no Routes")
	}
	ra := &cloudprovider.Route{TargetNode: "node-a", DestinationCIDR: "10.244.1.0/24"}
	for range 2 { // the retry finds its own route and succeeds
		if err := routes.CreateRoute(e.ctx, "kubernetes", "uid-a", ra); err != nil {
			t.Fatal(err)
		}
	}
	if err := routes.CreateRoute(e.ctx, "kubernetes", "uid-b", &cloudprovider.Route{TargetNode: "node-b", DestinationCIDR: "10.244.1.0/24"}); err == nil {
		t.Fatal("conflicting destination accepted")
	}
	if err := routes.CreateRoute(e.ctx, "kubernetes", "uid-x", &cloudprovider.Route{TargetNode: "ghost", DestinationCIDR: "10.244.9.0/24"}); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Fatalf("route to unknown node: %v", err)
	}
	if err := routes.CreateRoute(e.ctx, "other", "uid-b", &cloudprovider.Route{TargetNode: "node-b", DestinationCIDR: "10.244.2.0/24"}); err != nil {
		t.Fatal(err)
	}
	list, err := routes.ListRoutes(e.ctx, "kubernetes")
	if err != nil || len(list) != 1 || list[0].TargetNode != "node-a" || list[0].DestinationCIDR != "10.244.1.0/24" || list[0].Name == "" {
		t.Fatalf("list: %v %+v", err, list)
	}
	for range 2 {
		if err := routes.DeleteRoute(e.ctx, "kubernetes", list[0]); err != nil {
			t.Fatal(err)
		}
	}
	if list, _ := routes.ListRoutes(e.ctx, "kubernetes"); len(list) != 0 {
		t.Fatalf("after delete: %+v", list)
	}
}

// A load balancer the cloud cannot bind is an error for the controller,
// not a provisioning wait and not an address.
func TestLoadBalancerInErrorIsReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	a := e.instance(t, "a")
	lbs, _ := e.cloud.LoadBalancer()
	vip := e.pools.VIP.Masked().Addr().Next()
	squatter, err := net.Listen("tcp", net.JoinHostPort(vip.String(), strconv.Itoa(svcPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = squatter.Close() }()
	st, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", service(30000, corev1.ProtocolTCP), []*corev1.Node{node("a", "localcloud://"+a.ID)})
	var retry *cloudproviderapi.RetryError
	if err == nil || errors.As(err, &retry) || !strings.Contains(err.Error(), "is in error") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("want an error saying why, got status %v, err %v", st, err)
	}
}

func TestUnknownAnnotationsNamed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	lbs, _ := e.cloud.LoadBalancer()
	checker, ok := lbs.(cloud.AnnotationChecker)
	if !ok {
		t.Fatal("the localcloud load balancer does not name unknown annotations")
	}
	svc := service(30000, corev1.ProtocolTCP)
	svc.Annotations[lcprovider.AnnotationPrefix+"health-check-intreval"] = "1s"
	svc.Annotations["example.com/other"] = "x"
	unknown, known := checker.UnknownAnnotations(svc)
	if len(unknown) != 1 || unknown[0] != lcprovider.AnnotationPrefix+"health-check-intreval" {
		t.Fatalf("unknown = %v", unknown)
	}
	if !slices.Contains(known, lcprovider.AnnotationHealthCheckInterval) {
		t.Fatalf("known = %v", known)
	}
	delete(svc.Annotations, lcprovider.AnnotationPrefix+"health-check-intreval")
	if unknown, _ := checker.UnknownAnnotations(svc); len(unknown) != 0 {
		t.Fatalf("known annotations reported unknown: %v", unknown)
	}
}
