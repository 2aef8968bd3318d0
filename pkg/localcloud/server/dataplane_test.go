package server_test

import (
	"strings"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

const lbPort = 8080

// fastHC makes health changes visible within a few hundred milliseconds.
var fastHC = api.HealthCheck{IntervalMs: 50, TimeoutMs: 200, HealthyThreshold: 1, UnhealthyThreshold: 1}

func TestDataPlaneTCPAndUDP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a, b := e.instance("a"), e.instance("b")
	ta := startTCPBackend(t, a.Addresses.Internal, 0, "a")
	tb := startTCPBackend(t, b.Addresses.Internal, ta.port(), "b")
	startUDPBackend(t, a.Addresses.Internal, ta.port(), "a")
	startUDPBackend(t, b.Addresses.Internal, ta.port(), "b")
	lb, err := e.c.CreateLoadBalancer(e.ctx, api.CreateLoadBalancerRequest{
		Name: "web", Cluster: "c1",
		LoadBalancerSpec: api.LoadBalancerSpec{
			Listeners: []api.Listener{
				{Protocol: api.ProtocolTCP, Port: lbPort, NodePort: ta.port()},
				{Protocol: api.ProtocolUDP, Port: lbPort, NodePort: ta.port()},
			},
			Backends:    []string{a.ID, b.ID},
			HealthCheck: fastHC,
		},
	})
	if err != nil || lb.Status != api.LBActive {
		t.Fatalf("create: %v %+v", err, lb)
	}
	seen := map[string]int{}
	for range 6 {
		c, err := dialLB(lb.VIP, lbPort, "")
		if err != nil {
			t.Fatalf("dial VIP: %v", err)
		}
		if err := c.echo("hello"); err != nil {
			t.Fatalf("echo through %s: %v", c.backend, err)
		}
		seen[c.backend]++
		_ = c.Close()
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("traffic not spread over both backends: %v", seen)
	}
	udpSeen := map[string]bool{}
	for range 6 {
		got, err := udpAsk(lb.VIP, lbPort, "", "ping")
		if err != nil {
			t.Fatalf("udp: %v", err)
		}
		udpSeen[strings.SplitN(got, ":", 2)[0]] = true
		if !strings.HasSuffix(got, ":ping") {
			t.Fatalf("udp answer %q", got)
		}
	}
	if len(udpSeen) != 2 {
		t.Fatalf("udp flows not spread: %v", udpSeen)
	}

	// b dies: the health check notices and new connections all go to a.
	tb.stop()
	waitFor(t, "b unhealthy", func() bool { return !e.srv.BackendHealth(lb.ID)[b.ID] })
	for range 4 {
		c, err := dialLB(lb.VIP, lbPort, "")
		if err != nil {
			t.Fatalf("dial after b died: %v", err)
		}
		if c.backend != "a" {
			t.Fatalf("sent to unhealthy backend %s", c.backend)
		}
		_ = c.Close()
	}
	// A stopped instance is taken out at once, without waiting for checks.
	if _, err := e.c.StopInstance(e.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if h := e.srv.BackendHealth(lb.ID); h[a.ID] {
		t.Fatalf("stopped instance still healthy: %v", h)
	}
	if c, err := dialLB(lb.VIP, lbPort, ""); err == nil {
		t.Fatalf("connection served by %s with no healthy backend", c.backend)
	}
}

func TestDataPlaneSourceRanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a := e.instance("a")
	ta := startTCPBackend(t, a.Addresses.Internal, 0, "a")
	startUDPBackend(t, a.Addresses.Internal, ta.port(), "a")
	lb, err := e.c.CreateLoadBalancer(e.ctx, api.CreateLoadBalancerRequest{
		Name: "restricted", Cluster: "c1",
		LoadBalancerSpec: api.LoadBalancerSpec{
			Listeners: []api.Listener{
				{Protocol: api.ProtocolTCP, Port: lbPort, NodePort: ta.port()},
				{Protocol: api.ProtocolUDP, Port: lbPort, NodePort: ta.port()},
			},
			Backends: []string{a.ID}, HealthCheck: fastHC,
			SourceRanges: []string{"127.0.0.1/32"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	outsider := e.cfg.Pools.Internal.Addr().Next().Next().Next().Next().String() // not an instance address in use
	if _, err := dialLB(lb.VIP, lbPort, "127.0.0.1"); err != nil {
		t.Fatalf("allowed source refused: %v", err)
	}
	if c, err := dialLB(lb.VIP, lbPort, outsider); err == nil {
		t.Fatalf("source %s outside ranges reached %s", outsider, c.backend)
	}
	if _, err := udpAsk(lb.VIP, lbPort, "127.0.0.1", "x"); err != nil {
		t.Fatalf("allowed UDP source: %v", err)
	}
	if got, err := udpAsk(lb.VIP, lbPort, outsider, "x"); err == nil {
		t.Fatalf("UDP from %s outside ranges answered %q", outsider, got)
	}
	// Widening the ranges at runtime lets the outsider in.
	spec := lb.LoadBalancerSpec
	spec.SourceRanges = append(spec.SourceRanges, e.cfg.Pools.Internal.String())
	if _, err := e.c.UpdateLoadBalancer(e.ctx, lb.ID, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := dialLB(lb.VIP, lbPort, outsider); err != nil {
		t.Fatalf("after widening: %v", err)
	}
}

func TestDataPlaneBackendChangeKeepsConnections(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a, b := e.instance("a"), e.instance("b")
	ta := startTCPBackend(t, a.Addresses.Internal, 0, "a")
	startTCPBackend(t, b.Addresses.Internal, ta.port(), "b")
	req := api.CreateLoadBalancerRequest{
		Name: "sticky", Cluster: "c1",
		LoadBalancerSpec: api.LoadBalancerSpec{
			Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: lbPort, NodePort: ta.port()}},
			Backends:  []string{a.ID}, HealthCheck: fastHC,
		},
	}
	lb, err := e.c.CreateLoadBalancer(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	old, err := dialLB(lb.VIP, lbPort, "")
	if err != nil || old.backend != "a" {
		t.Fatalf("first connection: %v", err)
	}
	defer func() { _ = old.Close() }()
	spec := req.LoadBalancerSpec
	spec.Backends = []string{b.ID}
	if _, err := e.c.UpdateLoadBalancer(e.ctx, lb.ID, spec); err != nil {
		t.Fatal(err)
	}
	// Once new connections reach b, the change has been applied.
	waitFor(t, "new connections to reach backend b", func() bool {
		c, err := dialLB(lb.VIP, lbPort, "")
		if err != nil {
			return false
		}
		_ = c.Close()
		return c.backend == "b"
	})
	if err := old.echo("still-there"); err != nil {
		t.Fatalf("established connection dropped by the backend change: %v", err)
	}
}
