package dataplane

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/internal/netns"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// A network of the test's own, shaped as a slot of real nodes: the
// load-balancer namespace (lb0 toward the targets, cl0 toward the machine,
// the VIP range local), one target namespace, and the clients' address on
// the machine's end of cl0. Its ranges are no slot's (slots use
// 10.250.N.0/24 and 10.251.N.0/24).
const (
	ptPrefix    = "stratus-dpt"
	ptTargetNet = "10.249.77.0/24"
	ptLBAddr    = "10.249.77.2"
	ptTarget    = "10.249.77.10"
	ptVIPs      = "10.249.77.128/25"
	ptVIP       = "10.249.77.200"
	ptClient    = "10.248.77.1"
	ptClientNS  = "10.248.77.2"
	// IPv6: the clients' link and the VIP range (unique-local, no
	// slot's: slots use fd00:5354:0:N::/64 and fd00:5354:1:N::/64).
	ptClient6   = "fd00:5354:fe:77::1"
	ptClientNS6 = "fd00:5354:fe:77::2"
	ptVIPs6     = "fd00:5354:fd:77::/64"
	ptVIP6      = "fd00:5354:fd:77::8001"
	ptLBAddr6   = "fd00:5354:fb:77::2"
	ptTarget6   = "fd00:5354:fb:77::10"
	ptNodePort  = 30080
	ptHCPort    = 30081
)

type ptNet struct {
	lbNS, targetNS string
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// removePTNet deletes the namespaces and the machine's end of the client
// link (the route on it goes with it), also those a killed run left. The
// link is deleted first and waited for: a namespace's own links go
// asynchronously after `ip netns del`, and the next test adds the same
// names.
func removePTNet() {
	_ = exec.Command("ip", "link", "del", "stdpt-cl").Run()
	matches, _ := filepath.Glob(netns.Path(ptPrefix + "-*"))
	for _, m := range matches {
		_ = exec.Command("ip", "netns", "del", filepath.Base(m)).Run()
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat("/sys/class/net/stdpt-cl"); os.IsNotExist(err) {
			return
		}
	}
}

func newPTNet(t *testing.T) ptNet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the pass-through data plane needs root (network namespaces, nftables)")
	}
	removePTNet()
	t.Cleanup(removePTNet)
	n := ptNet{lbNS: ptPrefix + "-lb", targetNS: ptPrefix + "-tg"}
	ip(t, "netns", "add", n.lbNS)
	ip(t, "netns", "add", n.targetNS)
	ip(t, "link", "add", "stdpt-cl", "type", "veth", "peer", "name", "cl0", "netns", n.lbNS)
	ip(t, "link", "add", "stdpt-tg", "netns", n.targetNS, "type", "veth", "peer", "name", "lb0", "netns", n.lbNS)
	ip(t, "addr", "add", ptClient+"/24", "dev", "stdpt-cl")
	ip(t, "link", "set", "stdpt-cl", "up")
	ip(t, "-n", n.lbNS, "addr", "add", ptClientNS+"/24", "dev", "cl0")
	ip(t, "-n", n.lbNS, "addr", "add", ptLBAddr+"/24", "dev", "lb0")
	for _, l := range []string{"cl0", "lb0", "lo"} {
		ip(t, "-n", n.lbNS, "link", "set", l, "up")
	}
	ip(t, "-n", n.lbNS, "route", "add", "local", ptVIPs, "dev", "lb0", "table", "local")
	ip(t, "-n", n.targetNS, "link", "set", "stdpt-tg", "name", "eth0")
	ip(t, "-n", n.targetNS, "addr", "add", ptTarget+"/24", "dev", "eth0")
	ip(t, "-n", n.targetNS, "link", "set", "eth0", "up")
	ip(t, "-n", n.targetNS, "link", "set", "lo", "up")
	// Replies to the clients go back through the load balancer.
	ip(t, "-n", n.targetNS, "route", "add", "10.248.77.0/24", "via", ptLBAddr)
	ip(t, "route", "add", ptVIPs, "via", ptClientNS, "dev", "stdpt-cl", "src", ptClient)
	// nodad: the addresses are usable at once, not after duplicate
	// address detection.
	ip(t, "-6", "addr", "add", ptClient6+"/64", "dev", "stdpt-cl", "nodad")
	ip(t, "-n", n.lbNS, "-6", "addr", "add", ptClientNS6+"/64", "dev", "cl0", "nodad")
	ip(t, "-n", n.lbNS, "-6", "route", "add", "local", ptVIPs6, "dev", "lo")
	ip(t, "-6", "route", "add", ptVIPs6, "via", ptClientNS6, "dev", "stdpt-cl")
	ip(t, "-n", n.lbNS, "-6", "addr", "add", ptLBAddr6+"/64", "dev", "lb0", "nodad")
	ip(t, "-n", n.targetNS, "-6", "addr", "add", ptTarget6+"/64", "dev", "eth0", "nodad")
	ip(t, "-n", n.targetNS, "-6", "route", "add", "fd00:5354:fe:77::/64", "via", ptLBAddr6)
	if out, err := exec.Command("ip", "netns", "exec", n.lbNS, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1").CombinedOutput(); err != nil {
		t.Fatalf("IPv6 forwarding in %s: %v: %s", n.lbNS, err, out)
	}
	if out, err := exec.Command("ip", "netns", "exec", n.lbNS, "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
		t.Fatalf("forwarding in %s: %v: %s", n.lbNS, err, out)
	}
	return n
}

// serveClientAddr answers each connection on the target's node port with
// the address it came from, and accepts health checks on another port.
func (n ptNet) serveClientAddr(t *testing.T) {
	t.Helper()
	s := netns.Sockets{Path: netns.Path(n.targetNS)}
	for _, addr := range []string{
		fmt.Sprintf("%s:%d", ptTarget, ptNodePort), fmt.Sprintf("%s:%d", ptTarget, ptHCPort),
		fmt.Sprintf("[%s]:%d", ptTarget6, ptNodePort),
	} {
		ln, err := s.Listen(t.Context(), "tcp", addr)
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
				_, _ = fmt.Fprintf(c, "%s\n", c.RemoteAddr().(*net.TCPAddr).IP)
				_ = c.Close()
			}
		}()
	}
}

func askVIP(vip string) (string, error) {
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", net.JoinHostPort(vip, "80"))
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// eventually retries ask until it gives want (health checks run first).
func eventually(t *testing.T, what, want string, ask func() (string, error)) {
	t.Helper()
	var got string
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, err = ask(); err == nil && got == want {
			return
		}
	}
	t.Fatalf("%s: got %q (%v), want %q", what, got, err, want)
}

func ptSpec(backend string, ranges ...string) Spec {
	s := Spec{ID: "lb-pt1", VIP: netip.MustParseAddr(ptVIP),
		Listeners:   []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: ptNodePort}},
		Backends:    []Backend{{ID: "i-1", Address: netip.MustParseAddr(backend), Up: true}},
		HealthCheck: api.HealthCheck{Port: ptHCPort, IntervalMs: 200, TimeoutMs: 500}}
	for _, r := range ranges {
		s.SourceRanges = append(s.SourceRanges, netip.MustParsePrefix(r))
	}
	return s
}

func tables(t *testing.T, n ptNet) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", n.lbNS, "nft", "list", "tables").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list tables: %v: %s", err, out)
	}
	return string(out)
}

// TestPassThroughKeepsClientAddress: through a pass-through load balancer
// the target sees the client's own address, source ranges drop others
// before any NAT, and removing the load balancer removes its table.
func TestPassThroughKeepsClientAddress(t *testing.T) {
	n := newPTNet(t)
	n.serveClientAddr(t)
	// A table an earlier, killed run left is removed at start.
	if out, err := exec.Command("ip", "netns", "exec", n.lbNS, "nft", "add", "table", "inet", "lb_stale").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m, err := NewManagerIn(t.Context(), Options{Netns: netns.Path(n.lbNS), PassThrough: true,
		TargetNetwork: netip.MustParsePrefix(ptTargetNet)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if strings.Contains(tables(t, n), "lb_stale") {
		t.Fatal("a stale table survived the data plane's start")
	}
	if err := m.Apply(ptSpec(ptTarget)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the target's view of the client", ptClient, func() (string, error) { return askVIP(ptVIP) })
	if !strings.Contains(tables(t, n), "table inet lb_lb_pt1") {
		t.Fatalf("no table for the load balancer:\n%s", tables(t, n))
	}

	// Outside the source ranges: dropped, not refused and not forwarded.
	if err := m.Apply(ptSpec(ptTarget, "192.0.2.0/24")); err != nil {
		t.Fatal(err)
	}
	if got, err := askVIP(ptVIP); err == nil {
		t.Fatalf("a client outside loadBalancerSourceRanges got through: %q", got)
	}
	if err := m.Apply(ptSpec(ptTarget, "10.248.77.0/24")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a client inside the source ranges", ptClient, func() (string, error) { return askVIP(ptVIP) })

	m.Remove("lb-pt1")
	if strings.Contains(tables(t, n), "lb_lb_pt1") {
		t.Fatalf("the table outlived its load balancer:\n%s", tables(t, n))
	}
	if _, err := askVIP(ptVIP); err == nil {
		t.Fatal("a removed load balancer still answers")
	}
}

// TestDualStackLoadBalancer: a load balancer with an IPv4 and an IPv6 VIP
// passes the IPv4 VIP's packets through (the target sees the client) and,
// while its targets have no IPv6 address, proxies the IPv6 VIP to their
// IPv4 ones (the target sees the load balancer); once they have one in the
// targets' IPv6 network, the IPv6 VIP passes through too and the target
// sees the client's IPv6 address. An IPv6-only load balancer answers on its
// VIP alone; dropping the IPv6 VIP closes it.
func TestDualStackLoadBalancer(t *testing.T) {
	n := newPTNet(t)
	n.serveClientAddr(t)
	m, err := NewManagerIn(t.Context(), Options{Netns: netns.Path(n.lbNS), PassThrough: true,
		TargetNetwork: netip.MustParsePrefix(ptTargetNet), TargetNetwork6: netip.MustParsePrefix("fd00:5354:fb:77::/64")})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dual := ptSpec(ptTarget)
	dual.VIP6 = netip.MustParseAddr(ptVIP6)
	if err := m.Apply(dual); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the IPv4 VIP, passed through", ptClient, func() (string, error) { return askVIP(ptVIP) })
	eventually(t, "the IPv6 VIP, proxied", ptLBAddr, func() (string, error) { return askVIP(ptVIP6) })
	if !strings.Contains(tables(t, n), "table inet lb_lb_pt1") {
		t.Fatalf("the IPv4 VIP has no table:\n%s", tables(t, n))
	}
	// Source ranges hold for the proxied family too.
	ranged := dual
	ranged.SourceRanges = []netip.Prefix{netip.MustParsePrefix("10.248.77.0/24"), netip.MustParsePrefix("2001:db8::/64")}
	if err := m.Apply(ranged); err != nil {
		t.Fatal(err)
	}
	if got, err := askVIP(ptVIP6); err == nil && got != "" {
		t.Fatalf("an IPv6 client outside loadBalancerSourceRanges got through: %q", got)
	}
	eventually(t, "the IPv4 VIP inside its range", ptClient, func() (string, error) { return askVIP(ptVIP) })

	// A target with an IPv6 address is reached over IPv6 from the IPv6 VIP
	// (an IPv6 Service's node port is on the node's IPv6 address only),
	// passing through: the target sees the client's IPv6 address.
	dual6 := dual
	dual6.Backends = []Backend{{ID: "i-1", Address: netip.MustParseAddr(ptTarget), Address6: netip.MustParseAddr(ptTarget6), Up: true}}
	if err := m.Apply(dual6); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the IPv6 VIP passed through to an IPv6 target", ptClient6, func() (string, error) { return askVIP(ptVIP6) })
	eventually(t, "the IPv4 VIP beside it", ptClient, func() (string, error) { return askVIP(ptVIP) })
	if tb := tables(t, n); !strings.Contains(tb, "table inet lb_lb_pt1") {
		t.Fatalf("no table for the dual-stack load balancer:\n%s", tb)
	}
	// A proxy of both families when asked (ipMode Proxy).
	proxied := dual6
	proxied.Proxy = true
	if err := m.Apply(proxied); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the IPv6 VIP proxied to an IPv6 target", ptLBAddr6, func() (string, error) { return askVIP(ptVIP6) })
	eventually(t, "the IPv4 VIP proxied", ptLBAddr, func() (string, error) { return askVIP(ptVIP) })

	v4only := ptSpec(ptTarget)
	if err := m.Apply(v4only); err != nil {
		t.Fatal(err)
	}
	if _, err := askVIP(ptVIP6); err == nil {
		t.Fatal("the IPv6 VIP still answers after it was dropped")
	}

	v6only := ptSpec(ptTarget)
	v6only.ID, v6only.VIP, v6only.VIP6 = "lb-pt6", netip.Addr{}, netip.MustParseAddr("fd00:5354:fd:77::8002")
	if err := m.Apply(v6only); err != nil {
		t.Fatal(err)
	}
	eventually(t, "an IPv6-only load balancer", ptLBAddr, func() (string, error) { return askVIP("fd00:5354:fd:77::8002") })
	if strings.Contains(tables(t, n), "lb_lb_pt6") {
		t.Fatalf("an IPv6-only load balancer has a table:\n%s", tables(t, n))
	}
}

// TestPassThroughFallsBackToProxy: a target outside the targets' network
// cannot route replies back through the namespace, so that load balancer
// is a proxy made inside the namespace: the target then sees the load
// balancer's address, and the load balancer still answers.
func TestPassThroughFallsBackToProxy(t *testing.T) {
	n := newPTNet(t)
	n.serveClientAddr(t)
	m, err := NewManagerIn(t.Context(), Options{Netns: netns.Path(n.lbNS), PassThrough: true,
		TargetNetwork: netip.MustParsePrefix("10.249.78.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Apply(ptSpec(ptTarget)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the proxied target's view of the client", ptLBAddr, func() (string, error) { return askVIP(ptVIP) })
	if strings.Contains(tables(t, n), "lb_lb_pt1") {
		t.Fatalf("a proxied load balancer has a table:\n%s", tables(t, n))
	}
}

// TestNewManagerInRefuses: pass-through without what it needs is an
// error naming what is missing, not a data plane that cannot forward.
func TestNewManagerInRefuses(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		opts Options
		want string
	}{
		"no namespace":      {Options{PassThrough: true}, "needs a network namespace"},
		"missing namespace": {Options{Netns: "/run/netns/stratus-no-such-ns"}, "stratus-no-such-ns"},
	} {
		if _, err := NewManagerIn(ctx, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}

// TestPassThroughScript: every shape of table the data plane writes is
// accepted by nft (checked in a namespace of its own, committing nothing).
func TestPassThroughScript(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("nft --check needs root")
	}
	targets := []target{{id: "a", addr: netip.MustParseAddr("10.250.3.10")}, {id: "b", addr: netip.MustParseAddr("10.250.3.11")}}
	targets6 := []target{{id: "a", addr: netip.MustParseAddr("10.250.3.10"), addr6: netip.MustParseAddr("fd00:5354:0:3::10")},
		{id: "b", addr: netip.MustParseAddr("10.250.3.11"), addr6: netip.MustParseAddr("fd00:5354:0:3::11")}}
	tcpUDP := []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: 31000}, {Protocol: api.ProtocolUDP, Port: 53, NodePort: 31001},
		{Protocol: api.ProtocolTCP, Port: 443, NodePort: 31002}}
	network := netip.MustParsePrefix("10.250.3.0/24")
	cases := map[string]struct {
		spec    Spec
		healthy []target
		want    []string
	}{
		"round robin": {Spec{ID: "lb-1", VIP: netip.MustParseAddr("10.250.3.130"), Listeners: tcpUDP}, targets,
			[]string{"numgen inc mod 2", "udp dport 53 dnat ip to", "} : 31001"}},
		"affinity and ranges": {Spec{ID: "lb-2", VIP: netip.MustParseAddr("10.250.3.131"), Listeners: tcpUDP, ClientAffinity: true,
			SourceRanges: []netip.Prefix{netip.MustParsePrefix("10.251.3.0/24"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("2001:db8::/64")}},
			targets, []string{"jhash ip saddr mod 2 seed 0x5354", "ip saddr != { 10.251.3.0/24, 192.0.2.7/32 } drop"}},
		"only IPv6 ranges": {Spec{ID: "lb-3", VIP: netip.MustParseAddr("10.250.3.132"), Listeners: tcpUDP,
			SourceRanges: []netip.Prefix{netip.MustParsePrefix("2001:db8::/64")}}, targets, []string{"tcp dport { 80, 443 } drop"}},
		"no healthy target": {Spec{ID: "lb-4", VIP: netip.MustParseAddr("10.250.3.133"), Listeners: tcpUDP}, nil, []string{"chain nat_pre"}},
		"dual-stack": {Spec{ID: "lb-5", VIP: netip.MustParseAddr("10.250.3.134"), VIP6: netip.MustParseAddr("fd00:5354:0:3::8001"),
			Listeners: tcpUDP, ClientAffinity: true, SourceRanges: []netip.Prefix{netip.MustParsePrefix("10.251.3.0/24"), netip.MustParsePrefix("fd00:5354:1:3::/64")}},
			targets6, []string{"ip6 daddr fd00:5354:0:3::8001 tcp dport 80 dnat ip6 to jhash ip6 saddr mod 2", "ip6 saddr != { fd00:5354:1:3::/64 } drop",
				"ip saddr != { 10.251.3.0/24 } drop", "ip6 saddr fd00:5354:0:3::/64 ct original ip6 daddr fd00:5354:0:3::8001 masquerade"}},
	}
	for name, c := range cases {
		checkScript(t, name, c.spec, &snapshot{healthy: c.healthy}, c.healthy == nil, c.want, network)
	}
	// Endpoint targets: address . port per listener and family.
	eps := &snapshot{endpoints: true, byListener: map[listenerFamily][]target{
		{api.ProtocolTCP, 80, false}: {{id: "10.64.1.5:8080", addr: netip.MustParseAddr("10.64.1.5"), port: 8080},
			{id: "10.64.2.6:8081", addr: netip.MustParseAddr("10.64.2.6"), port: 8081}},
		{api.ProtocolTCP, 80, true}: {{id: "[fd00:5354:fe::5]:8080", addr: netip.MustParseAddr("fd00:5354:fe::5"), port: 8080}},
	}}
	epListeners := []api.Listener{{Protocol: api.ProtocolTCP, Port: 80}, {Protocol: api.ProtocolUDP, Port: 53}}
	checkScript(t, "endpoints", Spec{ID: "lb-6", VIP: netip.MustParseAddr("10.250.3.135"), VIP6: netip.MustParseAddr("fd00:5354:0:3::8002"),
		Listeners: epListeners, ClientAffinity: true, EndpointTargets: true}, eps, false,
		[]string{"tcp dport 80 dnat ip to jhash ip saddr mod 2 seed 0x5354 map { 0 : 10.64.1.5 . 8080, 1 : 10.64.2.6 . 8081 }\n",
			"ip6 daddr fd00:5354:0:3::8002 tcp dport 80 dnat ip6 to jhash ip6 saddr mod 1 seed 0x5354 map { 0 : fd00:5354:fe::5 . 8080 }\n"}, network)
	if script := nftScript(Spec{ID: "lb-7", VIP: netip.MustParseAddr("10.250.3.136"), Listeners: epListeners, EndpointTargets: true}, eps, []family{family4(netip.MustParseAddr("10.250.3.136"), network)}); strings.Contains(script, "udp dport 53 dnat") {
		t.Errorf("a listener without endpoints is DNATed:\n%s", script)
	}
}

// checkScript wants each of want in spec's script for snap, no DNAT when
// noDNAT, and nft to accept it.
func checkScript(t *testing.T, name string, spec Spec, snap *snapshot, noDNAT bool, want []string, network netip.Prefix) {
	t.Helper()
	fams := []family{family4(spec.VIP, network)}
	if spec.VIP6.IsValid() {
		fams = append(fams, family6(spec.VIP6, netip.MustParsePrefix("fd00:5354:0:3::/64")))
	}
	script := nftScript(spec, snap, fams)
	for _, w := range want {
		if !strings.Contains(script, w) {
			t.Errorf("%s: script lacks %q:\n%s", name, w, script)
		}
	}
	if noDNAT && strings.Contains(script, "dnat") {
		t.Errorf("%s: DNAT with no healthy target:\n%s", name, script)
	}
	cmd := exec.Command("unshare", "--net", "nft", "--check", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: nft refuses the script: %v: %s\n%s", name, err, out, script)
	}
}
