package realnode

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"strings"
)

// A dual-stack slot (Config.DualStack) has an IPv6 network beside its IPv4
// one, from the unique-local range reserved for the slots:
//
//   - the nodes' /64, fd00:5354:0:N::/64: the bridge ::1, lb0 ::2, node i
//     ::10+i (hexadecimal), the VIP range ::8000/113;
//   - the clients' /64, fd00:5354:1:N::/64: the machine's end of cl0 ::1,
//     the namespace's end ::2.
//
// Both /64s are checked unused by the machine before the slot is taken,
// as the IPv4 ones are. Addresses are added without duplicate address
// detection: the slot's links are its own, and DAD would hold an address
// back for a second or more. Like everything else of the slot they go with
// its links and namespaces.
const (
	reservedRange6   = "fd00:5354::/48"
	clientsRange6    = "fd00:5354:1::/48"
	firstNodeHost6   = 0x10
	vipPoolHost6     = 0x8000
	vipPoolBits6     = 113
	ipv6SubnetBits   = 64
	gatewayHost6     = 1
	clientHost6      = 1
	clientNSHost6    = 2
	lbHost6          = 2
	forwardingSysctl = "/proc/sys/net/ipv6/conf/all/forwarding"
)

// slot64 is the /64 of range (a /48) whose subnet ID is the slot's index.
func (s *slot) slot64(rangeCIDR string) netip.Prefix {
	b := netip.MustParsePrefix(rangeCIDR).Addr().As16()
	b[6], b[7] = byte(s.index>>8), byte(s.index)
	return netip.PrefixFrom(netip.AddrFrom16(b), ipv6SubnetBits)
}

// host6 is the address of p (a /64) with host part h.
func host6(p netip.Prefix, h uint16) netip.Addr {
	b := p.Addr().As16()
	b[14], b[15] = byte(h>>8), byte(h)
	return netip.AddrFrom16(b)
}

func (s *slot) subnet6() netip.Prefix      { return s.slot64(reservedRange6) }
func (s *slot) clients6() netip.Prefix     { return s.slot64(clientsRange6) }
func (s *slot) gateway6() netip.Addr       { return host6(s.subnet6(), gatewayHost6) }
func (s *slot) lbAddr6() netip.Addr        { return host6(s.subnet6(), lbHost6) }
func (s *slot) clientAddr6() netip.Addr    { return host6(s.clients6(), clientHost6) }
func (s *slot) clientNSAddr6() netip.Addr  { return host6(s.clients6(), clientNSHost6) }
func (s *slot) nodeAddr6(i int) netip.Addr { return host6(s.subnet6(), uint16(firstNodeHost6+i)) }
func (s *slot) vipPool6() netip.Prefix {
	return netip.PrefixFrom(host6(s.subnet6(), vipPoolHost6), vipPoolBits6)
}
func cidr(a netip.Addr, p netip.Prefix) string { return netip.PrefixFrom(a, p.Bits()).String() }

// bridgeSteps6 gives the bridge the machine's IPv6 address in the nodes'
// network.
func (s *slot) bridgeSteps6() [][]string {
	return [][]string{{"ip", "-6", "addr", "add", cidr(s.gateway6(), s.subnet6()), "dev", s.bridge(), "nodad"}}
}

// nodeSteps6 gives node i's eth0 its IPv6 address and turns IPv6
// forwarding on inside the namespace, for its pods; with the load-balancer
// network, the node reaches the IPv6 VIPs and the IPv6 clients through
// lb0 (a `local` route does not answer IPv6 neighbour discovery, so the
// VIP range is routed, not on-link), and its pods' connections to the VIPs
// leave with the node's address, as for IPv4.
func (s *slot) nodeSteps6(ns string, i int, lbNetwork bool, nft string) [][]string {
	steps := [][]string{
		{"ip", "-n", ns, "-6", "addr", "add", cidr(s.nodeAddr6(i), s.subnet6()), "dev", "eth0", "nodad"},
		{"nsenter", "--net=" + netnsPath(ns), "--", "/bin/sh", "-c", "echo 1 > " + forwardingSysctl},
	}
	if lbNetwork {
		steps = append(steps,
			[]string{"ip", "-n", ns, "-6", "route", "add", s.vipPool6().String(), "via", s.lbAddr6().String()},
			[]string{"ip", "-n", ns, "-6", "route", "add", s.clients6().String(), "via", s.lbAddr6().String()},
			[]string{"nsenter", "--net=" + netnsPath(ns), "--", nft, "add table ip6 stratus; " +
				"add chain ip6 stratus vip-snat { type nat hook postrouting priority 100; }; " +
				"add rule ip6 stratus vip-snat oifname eth0 ip6 daddr " + s.vipPool6().String() + " masquerade"})
	}
	return steps
}

// lbSteps6 gives the load-balancer namespace its IPv6 addresses, makes the
// IPv6 VIP range local there (localcloud's proxies bind it free, as
// IP_FREEBIND allows), and routes the machine to the IPv6 VIPs through
// cl0, from the clients' IPv6 address.
func (s *slot) lbSteps6(ns string) [][]string {
	return [][]string{
		{"ip", "-n", ns, "-6", "addr", "add", cidr(s.lbAddr6(), s.subnet6()), "dev", "lb0", "nodad"},
		{"ip", "-6", "addr", "add", cidr(s.clientAddr6(), s.clients6()), "dev", s.clientLink(), "nodad"},
		{"ip", "-n", ns, "-6", "addr", "add", cidr(s.clientNSAddr6(), s.clients6()), "dev", "cl0", "nodad"},
		{"ip", "-n", ns, "-6", "route", "add", "local", s.vipPool6().String(), "dev", "lo"},
		{"ip", "-6", "route", "add", s.vipPool6().String(), "via", s.clientNSAddr6().String(), "dev", s.clientLink()},
		{"nsenter", "--net=" + netnsPath(ns), "--", "/bin/sh", "-c", "echo 1 > " + forwardingSysctl},
	}
}

// machineNetworks6 returns the IPv6 networks of the machine's addresses
// and of its main routing table, except a default route; link-local ones
// are every link's and say nothing about use.
func machineNetworks6() ([]netip.Prefix, error) {
	used, err := interfaceNetworks(func(a netip.Addr) bool { return a.Is6() && !a.IsLinkLocalUnicast() })
	if err != nil {
		return nil, err
	}
	routes, err := mainRoutes6()
	if err != nil {
		return nil, err
	}
	return append(used, routes...), nil
}

// mainRoutes6 parses /proc/net/ipv6_route: destination (32 hex digits) and
// prefix length (2 hex digits) first; a machine without IPv6 has none.
func mainRoutes6() ([]netip.Prefix, error) {
	f, err := os.Open("/proc/net/ipv6_route")
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("realnode: IPv6 routes: %w", err)
	}
	defer func() { _ = f.Close() }()
	var out []netip.Prefix
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p, ok := parseIPv6Route(sc.Text()); ok {
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("realnode: IPv6 routes: %w", err)
	}
	return out, nil
}

func parseIPv6Route(line string) (netip.Prefix, bool) {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return netip.Prefix{}, false
	}
	dst, err1 := hex.DecodeString(fields[0])
	bits, err2 := hex.DecodeString(fields[1])
	if err1 != nil || err2 != nil || len(dst) != 16 || len(bits) != 1 || bits[0] == 0 || bits[0] > 128 {
		return netip.Prefix{}, false
	}
	a := netip.AddrFrom16([16]byte(dst))
	if a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsLoopback() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, int(bits[0])).Masked(), true
}
