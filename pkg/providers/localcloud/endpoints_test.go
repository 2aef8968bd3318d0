package localcloud_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// ensureEndpoints calls EnsureLoadBalancerEndpoints as the controller
// does, again while the cloud provisions.
func ensureEndpoints(t *testing.T, e *env, svc *corev1.Service, set cloud.EndpointSet) *corev1.LoadBalancerStatus {
	t.Helper()
	lbs, _ := e.cloud.LoadBalancer()
	et := lbs.(cloud.EndpointTargeter)
	var st *corev1.LoadBalancerStatus
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		st, err = et.EnsureLoadBalancerEndpoints(ctx, "kubernetes", svc, set)
		var retry *cloudproviderapi.RetryError
		if err != nil && !errors.As(err, &retry) {
			return false, err
		}
		return st != nil, nil
	})
	if err != nil {
		t.Fatalf("EnsureLoadBalancerEndpoints: %v", err)
	}
	return st
}

func (e *env) lbOf(t *testing.T) api.LoadBalancer {
	t.Helper()
	lbs, err := e.admin.ListAllLoadBalancers(e.ctx, client.ListOptions{Cluster: "kubernetes"})
	if err != nil || len(lbs) != 1 {
		t.Fatalf("load balancers: %v %+v", err, lbs)
	}
	return lbs[0]
}

// TestEndpointTargetsOffByDefault: without endpointTargets in the config
// the provider says it cannot, with the reason, and names the option.
func TestEndpointTargetsOffByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	lbs, _ := e.cloud.LoadBalancer()
	ok, why := lbs.(cloud.EndpointTargeter).EndpointTargets(service(0, corev1.ProtocolTCP))
	if ok || !strings.Contains(why, "endpointTargets") {
		t.Fatalf("EndpointTargets = %v, %q; want false naming the option", ok, why)
	}
}

// TestEnsureLoadBalancerEndpoints: with endpointTargets the provider maps
// each Service port, by name, to its endpoints of the load balancer's
// families, keeps every other Service-derived setting, forwards to the
// endpoints, changes nothing on a second call with the same set, lists
// the endpoints, and moves the load balancer between node and endpoint
// targets keeping its VIP.
func TestEnsureLoadBalancerEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, 100*time.Millisecond, testbed.InstancePool(t), "endpointTargets: true\n", netip.Prefix{})
	a, b := e.instance(t, "a"), e.instance(t, "b")
	pa := greeter(t, a.Addresses.Internal, 0, "a")
	pb := greeter(t, b.Addresses.Internal, 0, "b")
	lbs, _ := e.cloud.LoadBalancer()
	et := lbs.(cloud.EndpointTargeter)

	svc := service(0, corev1.ProtocolTCP)
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53})
	svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	svc.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"}
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32000
	if ok, why := et.EndpointTargets(svc); !ok {
		t.Fatalf("EndpointTargets: false, %q", why)
	}
	set := cloud.EndpointSet{
		"http": {
			{Address: a.Addresses.Internal, Port: int32(pa), Ready: true, Serving: true},
			{Address: "fd00:5354:fe::5", Port: 8080, Ready: true, Serving: true}, // no IPv6 VIP: left out
			{Address: b.Addresses.Internal, Port: int32(pb), Serving: true, Terminating: true},
		},
		"dns":     {},
		"missing": {{Address: "10.64.9.9", Port: 1}},
	}
	st := ensureEndpoints(t, e, svc, set)
	if len(st.Ingress) != 1 {
		t.Fatalf("status %+v", st)
	}
	vip := st.Ingress[0].IP
	lb := e.lbOf(t)
	wantEps := []api.Endpoint{
		{Address: a.Addresses.Internal, Port: pa, Ready: true, Serving: true},
		{Address: b.Addresses.Internal, Port: pb, Serving: true, Terminating: true},
	}
	slices.SortFunc(wantEps, func(x, y api.Endpoint) int { return strings.Compare(x.Address, y.Address) })
	if !lb.EndpointTargets() || len(lb.Backends) != 0 || len(lb.Listeners) != 2 ||
		!slices.Equal(lb.Listeners[0].Endpoints, wantEps) || lb.Listeners[0].NodePort != 0 || len(lb.Listeners[1].Endpoints) != 0 {
		t.Fatalf("load balancer %+v, want endpoints %+v on the http listener", lb.LoadBalancerSpec, wantEps)
	}
	if lb.SessionAffinity != api.SessionAffinityClientIP || !slices.Equal(lb.SourceRanges, []string{"127.0.0.0/8"}) ||
		lb.HealthCheck.Port != 0 || lb.HealthCheck.Path != "" || lb.HealthCheck.IntervalMs != 100 || lb.HealthCheck.UnhealthyThreshold != 1 {
		t.Fatalf("Service-derived settings: %+v", lb.LoadBalancerSpec)
	}
	if got := greet(t, vip); got != "a" {
		t.Fatalf("traffic reached %q, want the ready endpoint a", got)
	}

	// The same set again: no write.
	writes := e.count(t, "CreateLoadBalancer") + e.count(t, "UpdateLoadBalancer")
	ensureEndpoints(t, e, svc, set)
	if got := e.count(t, "CreateLoadBalancer") + e.count(t, "UpdateLoadBalancer"); got != writes {
		t.Fatalf("an unchanged endpoint set cost %d writes", got-writes)
	}
	owned, err := e.cloud.(cloud.LoadBalancerLister).ListLoadBalancers(e.ctx, "kubernetes")
	want := []string{wantEps[0].AddrPort(), wantEps[1].AddrPort()}
	slices.Sort(want)
	if err != nil || len(owned) != 1 || !slices.Equal(owned[0].Endpoints, want) || owned[0].Backends != nil {
		t.Fatalf("lister: %v %+v, want endpoints %v and no backends", err, owned, want)
	}

	// To node targets and back: the VIP stays.
	svc.Spec.Ports[0].NodePort, svc.Spec.Ports[1].NodePort = int32(pb), 31053
	if _, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, []*corev1.Node{node("b", "localcloud://"+b.ID)}); err != nil {
		t.Fatal(err)
	}
	if lb := e.lbOf(t); lb.EndpointTargets() || lb.VIP != vip || !slices.Equal(lb.Backends, []string{b.ID}) {
		t.Fatalf("to node targets: %+v", lb)
	}
	set["http"] = set["http"][2:] // only b, terminating
	if st := ensureEndpoints(t, e, svc, set); st.Ingress[0].IP != vip {
		t.Fatalf("back to endpoint targets: VIP %s, want %s", st.Ingress[0].IP, vip)
	}
	if got := greet(t, vip); got != "b" {
		t.Fatalf("traffic reached %q, want the serving-terminating endpoint b (no ready one)", got)
	}
	if err := lbs.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
}

// TestPlanLoadBalancerEndpoints: observe mode's plan of an endpoint change
// names the endpoints that come and go, and writes nothing.
func TestPlanLoadBalancerEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, 0, testbed.InstancePool(t), "endpointTargets: true\n", netip.Prefix{})
	svc := service(0, corev1.ProtocolTCP)
	set := cloud.EndpointSet{"http": {{Address: "10.64.1.5", Port: 8080, Ready: true, Serving: true}}}
	ensureEndpoints(t, e, svc, set)
	lbs, _ := e.cloud.LoadBalancer()
	planner := lbs.(interface {
		PlanLoadBalancerEndpoints(context.Context, string, *corev1.Service, cloud.EndpointSet) ([]string, error)
	})
	writes := e.count(t, "UpdateLoadBalancer")
	plan, err := planner.PlanLoadBalancerEndpoints(e.ctx, "kubernetes", svc, set)
	if err != nil || len(plan) != 0 {
		t.Fatalf("unchanged set: plan %q, %v", plan, err)
	}
	set["http"] = append(set["http"], cloud.Endpoint{Address: "10.64.1.6", Port: 8080, Ready: true, Serving: true})
	plan, err = planner.PlanLoadBalancerEndpoints(e.ctx, "kubernetes", svc, set)
	if err != nil || !slices.Equal(plan, []string{"endpoints TCP/8080: +[10.64.1.6:8080 ready] -[]"}) {
		t.Fatalf("plan %q, %v", plan, err)
	}
	if got := e.count(t, "UpdateLoadBalancer"); got != writes {
		t.Fatal("planning wrote")
	}
}
