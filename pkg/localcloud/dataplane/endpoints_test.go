package dataplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/internal/netns"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// Pods behind the pass-through network's target (their node): a
// namespace of their own whose addresses the load-balancer namespace
// reaches only through a route via the node, as a VPC's route table sends
// a pod CIDR to its instance.
const (
	ptPodNet  = "10.247.77.0/24"
	ptPodGW   = "10.247.77.1"
	ptPodA    = "10.247.77.5"
	ptPodB    = "10.247.77.6"
	ptPodNet6 = "fd00:5354:fa:77::/64"
	ptPodGW6  = "fd00:5354:fa:77::1"
	ptPodA6   = "fd00:5354:fa:77::5"
)

// addPods adds the pods' namespace behind the target and the route to it
// in the load-balancer namespace (removePTNet removes it all).
func (n ptNet) addPods(t *testing.T) string {
	t.Helper()
	pods := ptPrefix + "-pod"
	ip(t, "netns", "add", pods)
	ip(t, "link", "add", "stdpt-pod", "netns", n.targetNS, "type", "veth", "peer", "name", "eth0", "netns", pods)
	ip(t, "-n", n.targetNS, "addr", "add", ptPodGW+"/24", "dev", "stdpt-pod")
	ip(t, "-n", n.targetNS, "-6", "addr", "add", ptPodGW6+"/64", "dev", "stdpt-pod", "nodad")
	ip(t, "-n", n.targetNS, "link", "set", "stdpt-pod", "up")
	for _, a := range []string{ptPodA + "/24", ptPodB + "/24"} {
		ip(t, "-n", pods, "addr", "add", a, "dev", "eth0")
	}
	ip(t, "-n", pods, "-6", "addr", "add", ptPodA6+"/64", "dev", "eth0", "nodad")
	ip(t, "-n", pods, "link", "set", "eth0", "up")
	ip(t, "-n", pods, "link", "set", "lo", "up")
	ip(t, "-n", pods, "route", "add", "default", "via", ptPodGW)
	ip(t, "-n", pods, "-6", "route", "add", "default", "via", ptPodGW6)
	for _, sysctl := range []string{"net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"} {
		if out, err := exec.Command("ip", "netns", "exec", n.targetNS, "sysctl", "-qw", sysctl).CombinedOutput(); err != nil {
			t.Fatalf("%s in %s: %v: %s", sysctl, n.targetNS, err, out)
		}
	}
	ip(t, "-n", n.lbNS, "route", "add", ptPodNet, "via", ptTarget)
	ip(t, "-n", n.lbNS, "-6", "route", "add", ptPodNet6, "via", ptTarget6)
	return pods
}

// servePod answers each connection to addr with name and the address the
// connection came from.
func servePod(t *testing.T, pods, addr, name string) {
	t.Helper()
	ln, err := netns.Sockets{Path: netns.Path(pods)}.Listen(t.Context(), "tcp", addr)
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
			_, _ = fmt.Fprintf(c, "%s %s\n", name, c.RemoteAddr().(*net.TCPAddr).IP)
			_ = c.Close()
		}
	}()
}

func epSpec(proxy bool, eps ...api.Endpoint) Spec {
	return Spec{ID: "lb-ep1", VIP: netip.MustParseAddr(ptVIP), VIP6: netip.MustParseAddr(ptVIP6), EndpointTargets: true, Proxy: proxy,
		Listeners:   []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, Endpoints: eps}},
		HealthCheck: api.HealthCheck{IntervalMs: 100, TimeoutMs: 300, HealthyThreshold: 1, UnhealthyThreshold: 1}}
}

// always asks the VIP a few times and wants the same answer each time:
// round-robin over more than one target would show another.
func always(t *testing.T, what, vip, want string) {
	t.Helper()
	eventually(t, what, want, func() (string, error) { return askVIP(vip) })
	for range 6 {
		if got, err := askVIP(vip); err != nil || got != want {
			t.Fatalf("%s: got %q (%v), want %q every time", what, got, err, want)
		}
	}
}

// TestEndpointTargets: a load balancer whose targets are endpoints passes
// its VIPs' connections through to pod addresses and ports (the IPv6
// VIP's to the IPv6 endpoint), keeping the client's address; it prefers
// ready endpoints to serving-terminating ones and falls back to those
// when none is ready; as a proxy it does the same; and its health checks,
// dialed from the namespace, fail when the route to the pods is missing.
func TestEndpointTargets(t *testing.T) {
	n := newPTNet(t)
	pods := n.addPods(t)
	servePod(t, pods, ptPodA+":8080", "a")
	servePod(t, pods, ptPodB+":8081", "b")
	servePod(t, pods, "["+ptPodA6+"]:8080", "a6")
	m, err := NewManagerIn(t.Context(), Options{Netns: netns.Path(n.lbNS), PassThrough: true,
		TargetNetwork: netip.MustParsePrefix(ptTargetNet), TargetNetwork6: netip.MustParsePrefix("fd00:5354:fb:77::/64")})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a := api.Endpoint{Address: ptPodA, Port: 8080, Ready: true, Serving: true}
	a6 := api.Endpoint{Address: ptPodA6, Port: 8080, Ready: true, Serving: true}
	bTerminating := api.Endpoint{Address: ptPodB, Port: 8081, Serving: true, Terminating: true}

	if err := m.Apply(epSpec(false, a, bTerminating, a6)); err != nil {
		t.Fatal(err)
	}
	always(t, "ready endpoint first", ptVIP, "a "+ptClient)
	always(t, "the IPv6 VIP to the IPv6 endpoint", ptVIP6, "a6 "+ptClient6)
	if !strings.Contains(nftList(t, n), ptPodA+" . 8080") {
		t.Fatalf("the table does not DNAT to the endpoint:\n%s", nftList(t, n))
	}

	aGone := a
	aGone.Ready, aGone.Serving, aGone.Terminating = false, false, true
	if err := m.Apply(epSpec(false, aGone, bTerminating)); err != nil {
		t.Fatal(err)
	}
	always(t, "no ready endpoint: the serving-terminating one", ptVIP, "b "+ptClient)

	// As a proxy the connections come from the namespace.
	if err := m.Apply(epSpec(true, a, bTerminating)); err != nil {
		t.Fatal(err)
	}
	always(t, "proxied to the ready endpoint", ptVIP, "a "+ptLBAddr)
	if err := m.Apply(epSpec(true, aGone, bTerminating)); err != nil {
		t.Fatal(err)
	}
	always(t, "proxied to the serving-terminating endpoint", ptVIP, "b "+ptLBAddr)

	// Without the route the pods are unreachable from the namespace: the
	// health check fails, and the VIP has no target.
	if err := m.Apply(epSpec(false, a, bTerminating)); err != nil {
		t.Fatal(err)
	}
	always(t, "back to pass-through", ptVIP, "a "+ptClient)
	ip(t, "-n", n.lbNS, "route", "del", ptPodNet)
	waitHealth(t, m, map[string]bool{ptPodA + ":8080": false, ptPodB + ":8081": false})
	if got, err := askVIP(ptVIP); err == nil {
		t.Fatalf("an endpoint without a route answered: %q", got)
	}
	ip(t, "-n", n.lbNS, "route", "add", ptPodNet, "via", ptTarget)
	waitHealth(t, m, map[string]bool{ptPodA + ":8080": true, ptPodB + ":8081": true})
	always(t, "the route is back", ptVIP, "a "+ptClient)
}

func waitHealth(t *testing.T, m *Manager, want map[string]bool) {
	t.Helper()
	var got map[string]bool
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = m.Health("lb-ep1")
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
	}
	t.Fatalf("health %v, want %v", got, want)
}

func nftList(t *testing.T, n ptNet) string {
	t.Helper()
	out, err := exec.CommandContext(context.Background(), "ip", "netns", "exec", n.lbNS, "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v: %s", err, out)
	}
	return string(out)
}
