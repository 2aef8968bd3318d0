package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/stratus-ccm/stratus/internal/sbin"
)

// Options says where a Manager's load balancers live and how they forward.
type Options struct {
	// Netns is the path of the network namespace that owns the VIPs (its
	// routes make the VIP range local): listeners, dials to targets and
	// health checks are made there. Empty: the process' own namespace, the
	// VIPs on loopback.
	Netns string
	// PassThrough makes load balancers forward packets (nftables DNAT in
	// Netns) rather than proxy connections, so targets see the client's
	// address. It needs Netns.
	PassThrough bool
	// TargetNetwork is where pass-through can send packets: the network
	// whose hosts route the clients' range back through Netns. A load
	// balancer with a target outside it is proxied.
	TargetNetwork netip.Prefix
	// TargetNetwork6 is TargetNetwork's IPv6 counterpart: an IPv6 VIP
	// passes through to the targets' IPv6 addresses when every target has
	// one inside it; without it the IPv6 VIP is proxied.
	TargetNetwork6 netip.Prefix
}

// NewManagerIn returns a Manager for opts. With PassThrough it checks that
// nft works in the namespace and removes the tables an earlier run left.
func NewManagerIn(ctx context.Context, opts Options) (*Manager, error) {
	m := &Manager{opts: opts, lbs: map[string]*loadBalancer{}}
	if opts.Netns != "" {
		if _, err := os.Stat(opts.Netns); err != nil {
			return nil, fmt.Errorf("dataplane: network namespace: %w", err)
		}
	}
	if opts.PassThrough {
		if opts.Netns == "" {
			return nil, errors.New("dataplane: pass-through needs a network namespace")
		}
		if !opts.TargetNetwork.Addr().Is4() {
			return nil, errors.New("dataplane: pass-through needs the targets' IPv4 network")
		}
		if opts.TargetNetwork6.IsValid() && (!opts.TargetNetwork6.Addr().Is6() || opts.TargetNetwork6.Addr().Is4In6()) {
			return nil, fmt.Errorf("dataplane: the targets' IPv6 network %s is not IPv6", opts.TargetNetwork6)
		}
		n := &nft{nsPath: opts.Netns}
		for name, dst := range map[string]*string{"nft": &n.nft, "nsenter": &n.nsenter} {
			p, err := sbin.LookPath(name)
			if err != nil {
				return nil, fmt.Errorf("dataplane: pass-through: %w", err)
			}
			*dst = p
		}
		// Optional: without it, UDP flows to a removed target expire.
		n.conntrack, _ = sbin.LookPath("conntrack")
		if err := n.deleteStale(ctx); err != nil {
			return nil, fmt.Errorf("dataplane: pass-through: %w", err)
		}
		m.nft = n
	}
	m.ctx, m.cancel = context.WithCancel(ctx)
	return m, nil
}

// passFamilies are the families of spec's VIPs that nftables forwards:
// pass-through is on, neither a proxy (ipMode Proxy) nor a PROXY protocol
// header (which only a proxy can write) is asked for, and every target has
// an address of the family in that family's target network.
func (lb *loadBalancer) passFamilies(spec Spec) []family {
	if lb.nft == nil || spec.Proxy || spec.ProxyProtocol != "" {
		return nil
	}
	if spec.EndpointTargets {
		// Pods answer through their nodes, which route the clients' range
		// back through the namespace: every family passes through.
		var out []family
		if spec.VIP.Is4() {
			out = append(out, family4(spec.VIP, lb.opts.TargetNetwork))
		}
		if spec.VIP6.Is6() {
			out = append(out, family6(spec.VIP6, lb.opts.TargetNetwork6))
		}
		return out
	}
	inside := func(network netip.Prefix, addr func(Backend) netip.Addr) bool {
		for _, b := range spec.Backends {
			if !network.IsValid() || !network.Contains(addr(b)) {
				return false
			}
		}
		return true
	}
	var out []family
	if spec.VIP.Is4() && inside(lb.opts.TargetNetwork, func(b Backend) netip.Addr { return b.Address }) {
		out = append(out, family4(spec.VIP, lb.opts.TargetNetwork))
	}
	if spec.VIP6.Is6() && inside(lb.opts.TargetNetwork6, func(b Backend) netip.Addr { return b.Address6 }) {
		out = append(out, family6(spec.VIP6, lb.opts.TargetNetwork6))
	}
	return out
}

// passes reports whether fams holds vip's family.
func passes(fams []family, vip netip.Addr) bool {
	for _, f := range fams {
		if f.vip == vip {
			return true
		}
	}
	return false
}

// applyPassThroughLocked turns the load balancer's VIPs of fams into (or
// keeps them) an nftables table; apply has closed their proxy listeners
// first.
func (lb *loadBalancer) applyPassThroughLocked(fams []family) error {
	if !lb.passing || !sameFamilies(lb.fams, fams) {
		lb.passing = true
		lb.programmed = nil
	}
	lb.fams = fams
	lb.publishLocked()
	if lb.programmed == nil {
		// publishLocked logged it; apply returns it so the cloud marks the
		// load balancer in error and retries.
		return lb.programLocked(lb.snap.Load())
	}
	return nil
}

// programLocked commits the table for the snapshot's healthy targets,
// and forgets UDP flows to targets no longer among them.
func (lb *loadBalancer) programLocked(snap *snapshot) error {
	if err := lb.nft.apply(lb.ctx, nftScript(lb.spec, snap, lb.fams)); err != nil {
		lb.programmed = nil
		return err
	}
	healthy := snap.all()
	for _, old := range lb.programmed {
		if slices.ContainsFunc(healthy, func(t target) bool { return t.id == old.id }) {
			continue
		}
		for _, l := range lb.spec.Listeners {
			if proto(l.Protocol) != "udp" {
				continue
			}
			for _, f := range lb.fams {
				if a := f.addr(old); a.IsValid() {
					lb.nft.forgetUDP(lb.ctx, f.vip, l.Port, a)
				}
			}
		}
	}
	// Never nil once programmed, so apply knows the table exists.
	lb.programmed = append(make([]target, 0, len(healthy)), healthy...)
	return nil
}

func sameFamilies(a, b []family) bool {
	return slices.EqualFunc(a, b, func(x, y family) bool { return x.vip == y.vip && x.network == y.network })
}

// stopPassThroughLocked removes the load balancer's table. It runs when
// the manager closes too, so it does not use the load balancer's context.
func (lb *loadBalancer) stopPassThroughLocked() {
	lb.passing = false
	lb.programmed = nil
	lb.fams = nil
	if err := lb.nft.deleteTable(context.WithoutCancel(lb.ctx), lb.id); err != nil {
		lb.log.Error(err, "Removing the pass-through load balancer's table")
	}
}
