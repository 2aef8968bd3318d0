package realnode

import (
	"context"
	"fmt"
	"net/netip"
)

// The load-balancer network of a slot (Config.LoadBalancerNetwork): one
// more namespace beside the nodes', the cloud's side of the VPC, that owns
// the VIP range. lb0 is its port on the slot's bridge (10.250.N.2); cl0
// faces the machine, whose end of that link holds the clients' address
// 10.251.N.1, outside the nodes' range, so that a load balancer that keeps
// the client's address shows one a pod can tell from a node's. The nodes
// route the clients' range back through lb0, so replies pass the
// namespace's conntrack and are un-DNATed there. Everything here carries
// the slot's names, so the slot's cleanup removes it, also after a
// SIGKILL; the machine's one new route is on the slot's own link and goes
// with it.

const (
	// clientsRange holds each slot's clients' /24 (10.251.N.0/24).
	clientsRange = "10.251.0.0/16"
	lbHost       = 2
)

// lbNetns is the namespace's name: node names cannot hold an underscore,
// so it is never a node's, and the slot's prefix makes cleanup find it.
func (s *slot) lbNetns() string { return s.name() + "-cloud_lb" }

// lbLink is the machine's end of lb0, a port of the bridge; clientLink is
// the machine's end of cl0.
func (s *slot) lbLink() string     { return s.linkPrefix() + "lb" }
func (s *slot) clientLink() string { return s.linkPrefix() + "cl" }

// lbAddr is lb0's address in the nodes' subnet.
func (s *slot) lbAddr() netip.Addr {
	b := s.subnet.Addr().As4()
	b[3] = lbHost
	return netip.AddrFrom4(b)
}

// clients is the slot's clients' /24: 10.251.N.0/24.
func (s *slot) clients() netip.Prefix {
	b := netip.MustParsePrefix(clientsRange).Addr().As4()
	b[2] = byte(s.index)
	return netip.PrefixFrom(netip.AddrFrom4(b), 24)
}

func (s *slot) clientAddr() netip.Addr   { return s.clients().Addr().Next() }
func (s *slot) clientNSAddr() netip.Addr { return s.clientAddr().Next() }

// setupLBNetwork creates the load-balancer namespace and its two links,
// makes the VIP range local there (it answers the nodes' ARP for VIPs on
// lb0), routes the machine to the VIPs through cl0 from the clients'
// address, and turns forwarding on inside the namespace only.
func (s *slot) setupLBNetwork(ctx context.Context) error {
	ns := s.lbNetns()
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", s.lbLink(), "type", "veth", "peer", "name", "lb0", "netns", ns},
		{"ip", "link", "set", s.lbLink(), "master", s.bridge(), "up"},
		{"ip", "-n", ns, "addr", "add", s.lbAddr().String() + "/24", "dev", "lb0"},
		{"ip", "link", "add", s.clientLink(), "type", "veth", "peer", "name", "cl0", "netns", ns},
		{"ip", "addr", "add", s.clientAddr().String() + "/24", "dev", s.clientLink()},
		{"ip", "link", "set", s.clientLink(), "up"},
		{"ip", "-n", ns, "addr", "add", s.clientNSAddr().String() + "/24", "dev", "cl0"},
		{"ip", "-n", ns, "link", "set", "lb0", "up"},
		{"ip", "-n", ns, "link", "set", "cl0", "up"},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", ns, "route", "add", "local", s.vipPool().String(), "dev", "lb0", "table", "local"},
		{"ip", "route", "add", s.vipPool().String(), "via", s.clientNSAddr().String(), "dev", s.clientLink(), "src", s.clientAddr().String()},
		{"nsenter", "--net=" + netnsPath(ns), "--", "/bin/sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"},
	}
	if s.dualStack {
		steps = append(steps, s.lbSteps6(ns)...)
	}
	for _, st := range steps {
		if err := run(ctx, st[0], st[1:]...); err != nil {
			return fmt.Errorf("realnode: load-balancer network: %w", err)
		}
	}
	return nil
}

// LoadBalancerNetns is the path of the slot's load-balancer namespace,
// where a cloud serving the cluster runs its load balancers (localcloud's
// --dataplane-netns); empty without Config.LoadBalancerNetwork.
func (c *Cluster) LoadBalancerNetns() string {
	if !c.cfg.LoadBalancerNetwork {
		return ""
	}
	return netnsPath(c.slot.lbNetns())
}

// LoadBalancerAddr is the load-balancer namespace's address in the nodes'
// subnet: where proxied connections and health checks come from.
func (c *Cluster) LoadBalancerAddr() netip.Addr { return c.slot.lbAddr() }

// ClientAddr is the machine's address toward the VIPs with
// Config.LoadBalancerNetwork: what a backend sees of a client on the
// machine when the load balancer keeps the client's address.
func (c *Cluster) ClientAddr() netip.Addr { return c.slot.clientAddr() }

// nodeRouteToClients is the route each node needs for replies to clients
// to pass back through the load-balancer namespace.
func (s *slot) nodeRouteToClients(ns string) []string {
	return []string{"ip", "-n", ns, "route", "add", s.clients().String(), "via", s.lbAddr().String()}
}

// LoadBalancerAddr6 and ClientAddr6 are LoadBalancerAddr's and
// ClientAddr's IPv6 counterparts, with Config.DualStack (zero without).
func (c *Cluster) LoadBalancerAddr6() netip.Addr {
	if !c.slot.dualStack {
		return netip.Addr{}
	}
	return c.slot.lbAddr6()
}

// ClientAddr6 is ClientAddr's IPv6 counterpart (see LoadBalancerAddr6).
func (c *Cluster) ClientAddr6() netip.Addr {
	if !c.slot.dualStack || !c.cfg.LoadBalancerNetwork {
		return netip.Addr{}
	}
	return c.slot.clientAddr6()
}
