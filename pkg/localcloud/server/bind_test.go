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
	req := lbRequest("taken", n1.ID)
	req.Listeners = []api.Listener{{Protocol: api.ProtocolTCP, Port: lbPort, NodePort: 30080}}
	lb, err := e.c.CreateLoadBalancer(e.ctx, req)
	if err != nil {
		_ = squatter.Close()
		t.Fatal(err)
	}
	if lb.VIP != vip.String() {
		_ = squatter.Close()
		t.Fatalf("VIP %s, expected %s", lb.VIP, vip)
	}
	if lb.Status != api.LBError || !strings.Contains(lb.StatusMessage, net.JoinHostPort(vip.String(), strconv.Itoa(lbPort))) ||
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
