package server_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// TestEndpointTargetsAPI: a load balancer whose targets are endpoints
// round-trips through the HTTP API and the client, forwards to its
// endpoints (here on instance addresses, which this cloud's proxy
// reaches), survives a restart, and keeps its VIP when it moves to node
// targets and back.
func TestEndpointTargetsAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a, b := e.instance("a"), e.instance("b")
	ta := startTCPBackend(t, a.Addresses.Internal, 0, "a")
	tb := startTCPBackend(t, b.Addresses.Internal, 0, "b")
	eps := []api.Endpoint{
		{Address: a.Addresses.Internal, Port: ta.port(), Ready: true, Serving: true},
		{Address: b.Addresses.Internal, Port: tb.port(), Serving: true, Terminating: true},
	}
	spec := api.LoadBalancerSpec{Targets: api.TargetsEndpoints, HealthCheck: fastHC,
		Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: lbPort, Endpoints: eps}}}
	lb, err := e.c.CreateLoadBalancer(e.ctx, api.CreateLoadBalancerRequest{Name: "ep", Cluster: "c1", LoadBalancerSpec: spec})
	if err != nil || lb.Status != api.LBActive {
		t.Fatalf("create: %v %+v", err, lb)
	}
	got, err := e.c.GetLoadBalancer(e.ctx, lb.ID)
	if err != nil || !reflect.DeepEqual(got.Listeners, spec.Listeners) || !got.EndpointTargets() {
		t.Fatalf("get: %v %+v, want the listeners %+v", err, got, spec.Listeners)
	}
	// Only the ready endpoint gets connections while it is healthy.
	waitFor(t, "both endpoints probed healthy", func() bool {
		h := e.srv.BackendHealth(lb.ID)
		return h[eps[0].AddrPort()] && h[eps[1].AddrPort()]
	})
	for range 4 {
		c, err := dialLB(lb.VIP, lbPort, "")
		if err != nil {
			t.Fatalf("dial VIP: %v", err)
		}
		if c.backend != "a" {
			t.Fatalf("sent to %s, want the ready endpoint a", c.backend)
		}
		_ = c.Close()
	}
	// The ready one fails its health check: the terminating one serves.
	ta.stop()
	waitFor(t, "a unhealthy", func() bool { return !e.srv.BackendHealth(lb.ID)[eps[0].AddrPort()] })
	c, err := dialLB(lb.VIP, lbPort, "")
	if err != nil || c.backend != "b" {
		t.Fatalf("with no ready endpoint healthy: %v %+v, want b", err, c)
	}
	_ = c.Close()

	e.restart()
	got, err = e.c.GetLoadBalancer(e.ctx, lb.ID)
	if err != nil || !reflect.DeepEqual(got.Listeners, spec.Listeners) || got.VIP != lb.VIP {
		t.Fatalf("after a restart: %v %+v", err, got)
	}

	nodes := api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: lbPort, NodePort: tb.port()}},
		Backends: []string{b.ID}, HealthCheck: fastHC}
	moved, err := e.c.UpdateLoadBalancer(e.ctx, lb.ID, nodes)
	if err != nil || moved.VIP != lb.VIP || moved.EndpointTargets() {
		t.Fatalf("to node targets: %v %+v, want VIP %s", err, moved, lb.VIP)
	}
	moved, err = e.c.UpdateLoadBalancer(e.ctx, lb.ID, spec)
	if err != nil || moved.VIP != lb.VIP || !reflect.DeepEqual(moved.Listeners, spec.Listeners) {
		t.Fatalf("back to endpoint targets: %v %+v, want VIP %s", err, moved, lb.VIP)
	}
}

// TestEndpointTargetsBadInput: the API refuses endpoints beside backends
// and a malformed endpoint, naming the field.
func TestEndpointTargetsBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for body, field := range map[string]string{
		`{"name":"x","cluster":"c","targets":"endpoints","backends":["i-0123456789abcdef"],"listeners":[{"protocol":"TCP","port":80}]}`:             "backends",
		`{"name":"x","cluster":"c","targets":"endpoints","listeners":[{"protocol":"TCP","port":80,"endpoints":[{"address":"10.64.1","port":80}]}]}`: "listeners[0].endpoints[0].address",
		`{"name":"x","cluster":"c","listeners":[{"protocol":"TCP","port":80}]}`:                                                                     "listeners[0].nodePort",
	} {
		code, eb := e.raw(http.MethodPost, "/v1/loadbalancers", body)
		if code != http.StatusBadRequest || eb.Field != field {
			t.Errorf("%s: %d %+v, want 400 on %s", body, code, eb, field)
		}
	}
}
