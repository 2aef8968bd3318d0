package service_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestEndpointTargetsEndToEnd: a Service without node ports on a real API
// server, its EndpointSlice written as the EndpointSlice controller would,
// localcloud with endpoint targets. Its load balancer targets the slice's
// endpoints, follows the slice when the pod is replaced, and a burst of
// twenty slice changes costs a few cloud calls, not twenty. The load
// balancers live in an empty network namespace of the test's own, so their
// health checks of the endpoints (documentation addresses) go nowhere.
func TestEndpointTargetsEndToEnd(t *testing.T) {
	env := testbed.Start(t)
	ctx := testbed.Context(t, 5*time.Minute)
	ns := emptyNetns(t)
	knobs := api.DefaultKnobs()
	knobs.LBProvisioningTime = api.Duration(100 * time.Millisecond)
	lc := servicetest.StartCloud(t, knobs, servicetest.CloudOptions{EndpointTargets: true, Netns: ns})
	// A quiet period of two seconds: the burst below is surely one.
	servicetest.StartController(t, env.Config, lc, service.Config{NodeSyncDelay: 2 * time.Second,
		MinRetryDelay: 200 * time.Millisecond, MaxRetryDelay: 2 * time.Second})
	cs := env.Clientset

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "direct"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: ptrTo(false),
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := func(addr string, ready bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(ready)}}
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "direct-1", Labels: map[string]string{discoveryv1.LabelServiceName: "direct"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: ptrTo(int32(8080)), Protocol: ptrTo(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{ready("192.0.2.10", true)},
	}
	slice, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	targets := func(want string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			return endpointsOf(lbOf(ctx, t, lc, "direct")) == want, nil
		})
		if err != nil {
			t.Fatalf("waiting for the load balancer to target %q: %v; it targets %q", want, err, endpointsOf(lbOf(ctx, t, lc, "direct")))
		}
	}
	targets("192.0.2.10:8080")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Services("default").Get(ctx, "direct", metav1.GetOptions{})
		return err == nil && len(got.Status.LoadBalancer.Ingress) == 1, nil
	})
	if err != nil {
		t.Fatalf("no ingress published: %v", err)
	}

	// The pod is replaced: the load balancer follows the slice.
	slice.Endpoints = []discoveryv1.Endpoint{ready("192.0.2.11", true)}
	if slice, err = cs.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	targets("192.0.2.11:8080")
	before := updates(ctx, t, lc)

	// A burst: twenty changes of a second endpoint's readiness, as fast as
	// the API server takes them, ending ready.
	for i := range 20 {
		slice.Endpoints = []discoveryv1.Endpoint{ready("192.0.2.11", true), ready("192.0.2.12", i%2 == 1)}
		if slice, err = cs.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	targets("192.0.2.11:8080,192.0.2.12:8080")
	// Once the burst has settled (its hold is at most five quiet periods).
	time.Sleep(3 * time.Second)
	targets("192.0.2.11:8080,192.0.2.12:8080")
	n := updates(ctx, t, lc) - before
	if n < 1 || n > 5 {
		t.Errorf("a burst of 20 endpoint changes cost %d load balancer updates, want a few", n)
	}
	t.Logf("a burst of 20 endpoint changes cost %d load balancer updates", n)
}

// emptyNetns is a network namespace of the test's own with only its
// loopback up, removed when the test ends.
func emptyNetns(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("stratus-svc-ep-%d", os.Getpid())
	run := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	run("-n", name, "link", "set", "lo", "up")
	return "/run/netns/" + name
}

// lbOf is the Service's load balancer in localcloud, nil if none.
func lbOf(ctx context.Context, t *testing.T, lc *servicetest.Cloud, svc string) *api.LoadBalancer {
	t.Helper()
	lbs, err := lc.Client.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: servicetest.ClusterName})
	if err != nil {
		t.Fatal(err)
	}
	for i := range lbs {
		if lbs[i].Tags[api.TagServiceName] == svc {
			return &lbs[i]
		}
	}
	return nil
}

// endpointsOf lists a load balancer's endpoint targets, "address:port"
// joined by commas.
func endpointsOf(lb *api.LoadBalancer) string {
	if lb == nil {
		return ""
	}
	var out []string
	for _, l := range lb.Listeners {
		for _, e := range l.Endpoints {
			out = append(out, fmt.Sprintf("%s:%d", e.Address, e.Port))
		}
	}
	return strings.Join(out, ",")
}

// updates counts the load balancer updates the cloud served (the test's
// only load balancer).
func updates(ctx context.Context, t *testing.T, lc *servicetest.Cloud) int64 {
	t.Helper()
	st, err := lc.Client.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st.Count("UpdateLoadBalancer")
}
