package dataplane

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// Pass-through: a load balancer that forwards packets, as a cloud's network
// load balancer does, instead of proxying connections. Each one is an
// nftables table of its own inside the data plane's namespace, replaced in
// one atomic transaction whenever its listeners, source ranges or healthy
// targets change:
//   - filter_pre drops, before any NAT, packets for the VIP's ports from
//     sources outside loadBalancerSourceRanges;
//   - nat_pre DNATs VIP:port to a healthy target's address:nodePort, picked
//     per new flow (round-robin, or a hash of the source address for
//     sessionAffinity ClientIP); conntrack keeps a flow on its target;
//   - nat_post masquerades flows whose client is itself inside the target
//     network (a node or a pod behind its node's SNAT): their replies would
//     otherwise go straight back, around the namespace, un-DNATed.
//
// The client's address is kept for everyone else: the targets route the
// clients' range back through the namespace.

// affinitySeed makes the source hash of ClientIP affinity a fixed
// function, so that a rebuilt table keeps each client on its target.
const affinitySeed = "0x5354"

// tablePrefix names every table the data plane owns in its namespace.
const tablePrefix = "lb_"

// tableName is the nftables table of load balancer id: identifiers allow
// letters, digits and underscores.
func tableName(id string) string {
	return tablePrefix + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, id)
}

// family is one IP family a pass-through table serves: the nftables
// keyword of its addresses, its VIP, the targets' network, and which of a
// target's addresses it DNATs to.
type family struct {
	ip      string // "ip" or "ip6"
	vip     netip.Addr
	network netip.Prefix
	addr    func(target) netip.Addr
}

func family4(vip netip.Addr, network netip.Prefix) family {
	return family{ip: "ip", vip: vip, network: network, addr: func(t target) netip.Addr { return t.familyAddr(false) }}
}

func family6(vip netip.Addr, network netip.Prefix) family {
	return family{ip: "ip6", vip: vip, network: network, addr: func(t target) netip.Addr { return t.familyAddr(true) }}
}

// nftScript is the transaction that replaces the load balancer's table,
// with the rules of each family it passes through: adding then deleting
// the table first makes it work whether or not the table exists, all in
// one atomic commit.
func nftScript(spec Spec, snap *snapshot, fams []family) string {
	t := tableName(spec.ID)
	var b strings.Builder
	fmt.Fprintf(&b, "add table inet %s\ndelete table inet %s\ntable inet %s {\n", t, t, t)

	b.WriteString("\tchain filter_pre {\n\t\ttype filter hook prerouting priority -150; policy accept;\n")
	for _, f := range fams {
		writeSourceRanges(&b, spec, f)
	}
	b.WriteString("\t}\n")

	b.WriteString("\tchain nat_pre {\n\t\ttype nat hook prerouting priority -100; policy accept;\n")
	// With no healthy target nothing is DNATed: the namespace owns the
	// VIP and nothing listens there, so a TCP client is refused at once.
	for _, f := range fams {
		writeDNAT(&b, spec, snap, f)
	}
	b.WriteString("\t}\n")

	b.WriteString("\tchain nat_post {\n\t\ttype nat hook postrouting priority 100; policy accept;\n")
	for _, f := range fams {
		if f.network.IsValid() {
			fmt.Fprintf(&b, "\t\t%s saddr %s ct original %s daddr %s masquerade\n", f.ip, f.network.Masked(), f.ip, f.vip)
		}
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// writeSourceRanges drops, for f's VIP, the sources outside the ranges of
// f's family.
func writeSourceRanges(b *strings.Builder, spec Spec, f family) {
	if len(spec.SourceRanges) == 0 {
		return
	}
	var ranges []string
	for _, p := range spec.SourceRanges {
		if p.Addr().Is4() == f.vip.Is4() {
			ranges = append(ranges, p.Masked().String())
		}
	}
	for _, proto := range protocols(spec.Listeners) {
		ports := portList(spec.Listeners, proto)
		if len(ranges) == 0 {
			// Only ranges of the other family: no client of this one is
			// allowed.
			fmt.Fprintf(b, "\t\t%s daddr %s %s dport { %s } drop\n", f.ip, f.vip, proto, ports)
			continue
		}
		fmt.Fprintf(b, "\t\t%s daddr %s %s dport { %s } %s saddr != { %s } drop\n", f.ip, f.vip, proto, ports, f.ip, strings.Join(ranges, ", "))
	}
}

// writeDNAT sends f's VIP:port to a healthy target's address of f's
// family and node port, or, for endpoint targets, to one of the
// listener's endpoints of f's family, address and port.
func writeDNAT(b *strings.Builder, spec Spec, snap *snapshot, f family) {
	for _, l := range sortedListeners(spec.Listeners) {
		targets := snap.targets(listenerFamily{l.Protocol, l.Port, f.ip == "ip6"})
		if len(targets) == 0 {
			continue
		}
		pick := fmt.Sprintf("numgen inc mod %d", len(targets))
		if spec.ClientAffinity {
			pick = fmt.Sprintf("jhash %s saddr mod %d seed %s", f.ip, len(targets), affinitySeed)
		}
		var elems []string
		for i, t := range targets {
			if snap.endpoints {
				elems = append(elems, fmt.Sprintf("%d : %s . %d", i, f.addr(t), t.port))
			} else {
				elems = append(elems, fmt.Sprintf("%d : %s", i, f.addr(t)))
			}
		}
		rule := fmt.Sprintf("\t\t%s daddr %s %s dport %d dnat %s to %s map { %s }", f.ip, f.vip, proto(l.Protocol), l.Port, f.ip, pick, strings.Join(elems, ", "))
		if !snap.endpoints {
			rule += fmt.Sprintf(" : %d", l.NodePort)
		}
		b.WriteString(rule + "\n")
	}
}

func proto(p api.Protocol) string {
	if p == api.ProtocolUDP {
		return "udp"
	}
	return "tcp"
}

func protocols(ls []api.Listener) []string {
	var out []string
	for _, l := range ls {
		if p := proto(l.Protocol); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func portList(ls []api.Listener, p string) string {
	var ports []int
	for _, l := range ls {
		if proto(l.Protocol) == p {
			ports = append(ports, l.Port)
		}
	}
	slices.Sort(ports)
	ports = slices.Compact(ports)
	s := make([]string, len(ports))
	for i, port := range ports {
		s[i] = fmt.Sprint(port)
	}
	return strings.Join(s, ", ")
}

func sortedListeners(ls []api.Listener) []api.Listener {
	out := slices.Clone(ls)
	slices.SortFunc(out, func(a, b api.Listener) int {
		if c := strings.Compare(string(a.Protocol), string(b.Protocol)); c != 0 {
			return c
		}
		return a.Port - b.Port
	})
	return out
}

// nft runs the nft program inside the namespace, feeding it script.
type nft struct {
	nsPath, nft, nsenter, conntrack string
}

// nftTimeout bounds one transaction; it takes milliseconds.
const nftTimeout = 20 * time.Second

func (n nft) run(ctx context.Context, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, nftTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.nsenter, append([]string{"--net=" + n.nsPath, "--", n.nft}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("nft %s in %s: %w: %s", strings.Join(args, " "), n.nsPath, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// apply commits a script.
func (n nft) apply(ctx context.Context, script string) error {
	_, err := n.run(ctx, script, "-f", "-")
	return err
}

// deleteTable removes a load balancer's table, if it is there.
func (n nft) deleteTable(ctx context.Context, id string) error {
	t := tableName(id)
	return n.apply(ctx, fmt.Sprintf("add table inet %s\ndelete table inet %s\n", t, t))
}

// deleteStale removes every table of the data plane's left in the
// namespace by an earlier run (one killed before it could clean up), so a
// load balancer deleted meanwhile does not keep forwarding.
func (n nft) deleteStale(ctx context.Context) error {
	out, err := n.run(ctx, "", "list", "tables", "inet")
	if err != nil {
		return err
	}
	var script strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "table inet "); ok && strings.HasPrefix(name, tablePrefix) {
			fmt.Fprintf(&script, "delete table inet %s\n", name)
		}
	}
	if script.Len() == 0 {
		return nil
	}
	return n.apply(ctx, script.String())
}

// forgetUDP drops the conntrack entries of UDP flows from vip:port to a
// target that left the healthy set: UDP has no end, so without this a
// client that keeps sending would stay on a dead target. Best effort: with
// no conntrack program the flows expire on their own.
func (n nft) forgetUDP(ctx context.Context, vip netip.Addr, port int, target netip.Addr) {
	if n.conntrack == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, nftTimeout)
	defer cancel()
	_ = exec.CommandContext(ctx, n.nsenter, "--net="+n.nsPath, "--", n.conntrack, "-D", "-p", "udp",
		"--orig-dst", vip.String(), "--orig-port-dst", fmt.Sprint(port), "--reply-src", target.String()).Run()
}
