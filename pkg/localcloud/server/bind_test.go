package server_test

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// A VIP:port held by another process (another sandbox on the same pool,
// say) makes the load balancer error with the reason, not active; once
// the port is free, the cloud's retry binds it and it becomes active.
func TestLoadBalancerBindFailureIsAnError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.cfg.BindRetryInterval = 100 * time.Millisecond
	e.restart()
	n1 := e.instance("n1")
	// The first VIP of a fresh pool is the pool's first host address.
	vip := e.cfg.Pools.VIP.Masked().Addr().Next()
	squatter, err := net.Listen("tcp", netip.AddrPortFrom(vip, lbPort).String())
	if err != nil {
		t.Fatalf("occupy the VIP: %v", err)
	}
	udpSquatter, err := net.ListenPacket("udp", netip.AddrPortFrom(vip, lbPort).String())
	if err != nil {
		_ = squatter.Close()
		t.Fatalf("occupy the VIP's UDP port: %v", err)
	}
	req := lbRequest("taken", n1.ID)
	req.Listeners = []api.Listener{{Protocol: api.ProtocolTCP, Port: lbPort, NodePort: 30080}, {Protocol: api.ProtocolUDP, Port: lbPort, NodePort: 30081}}
	lb, err := e.c.CreateLoadBalancer(e.ctx, req)
	_ = udpSquatter.Close()
	if err != nil {
		_ = squatter.Close()
		t.Fatal(err)
	}
	if lb.VIP != vip.String() {
		_ = squatter.Close()
		t.Fatalf("VIP %s, expected %s", lb.VIP, vip)
	}
	// Both listeners' reasons, on one line (it ends up in a table row
	// and in the Service's event).
	if lb.Status != api.LBError || !strings.Contains(lb.StatusMessage, "listen tcp "+net.JoinHostPort(vip.String(), strconv.Itoa(lbPort))) ||
		!strings.Contains(lb.StatusMessage, "listen udp ") || strings.Contains(lb.StatusMessage, "\n") ||
		!strings.Contains(lb.StatusMessage, "address already in use") {
		_ = squatter.Close()
		t.Fatalf("want status error naming the VIP:port, got %s %q", lb.Status, lb.StatusMessage)
	}
	got, err := e.c.GetLoadBalancer(e.ctx, lb.ID)
	if err != nil || got.Status != api.LBError {
		_ = squatter.Close()
		t.Fatalf("get: %v %+v", err, got)
	}
	if err := squatter.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the load balancer to bind once the port is free", func() bool {
		got, err := e.c.GetLoadBalancer(e.ctx, lb.ID)
		return err == nil && got.Status == api.LBActive && got.StatusMessage == ""
	})
	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", netip.AddrPortFrom(vip, lbPort).String())
	if err != nil {
		t.Fatalf("VIP does not accept after recovery: %v", err)
	}
	_ = c.Close()
}

// A load balancer that finishes provisioning in the background is bound
// before its record says active, so a client that sees it active can
// connect at once; one whose VIP:port is taken goes from provisioning
// straight to error, never showing active.
func TestProvisionedLoadBalancerIsBoundWhenActive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(k *api.Knobs) { k.LBProvisioningTime = api.Duration(30 * time.Millisecond) })
	n1 := e.instance("n1")
	// The second VIP handed out is the pool's second host address.
	taken := e.cfg.Pools.VIP.Masked().Addr().Next().Next()
	squatter, err := net.Listen("tcp", netip.AddrPortFrom(taken, lbPort).String())
	if err != nil {
		t.Fatalf("occupy the VIP: %v", err)
	}
	t.Cleanup(func() { _ = squatter.Close() })
	first := func(name string) *api.LoadBalancer {
		req := lbRequest(name, n1.ID)
		req.Listeners = []api.Listener{{Protocol: api.ProtocolTCP, Port: lbPort, NodePort: 30080}}
		lb, err := e.c.CreateLoadBalancer(e.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if lb.Status != api.LBProvisioning {
			t.Fatalf("%s: created %s, want provisioning", name, lb.Status)
		}
		// Poll without pause: the first state after provisioning is the one
		// a controller polling the cloud would act on.
		for {
			got, err := e.c.GetLoadBalancer(e.ctx, lb.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != api.LBProvisioning {
				return got
			}
		}
	}
	free := first("free")
	if free.Status != api.LBActive {
		t.Fatalf("free VIP: %s %q, want active", free.Status, free.StatusMessage)
	}
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(t.Context(), "tcp", net.JoinHostPort(free.VIP, strconv.Itoa(lbPort)))
	if err != nil {
		t.Fatalf("active load balancer refuses connections: %v", err)
	}
	_ = c.Close()
	busy := first("busy")
	if busy.VIP != taken.String() {
		t.Fatalf("VIP %s, expected %s", busy.VIP, taken)
	}
	if busy.Status != api.LBError || !strings.Contains(busy.StatusMessage, "address already in use") {
		t.Fatalf("taken VIP: %s %q, want error", busy.Status, busy.StatusMessage)
	}
}
