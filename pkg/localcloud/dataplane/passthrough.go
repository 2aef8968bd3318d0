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
	// balancer with a target outside it is proxied, and an IPv6 VIP always
	// is (its targets are the nodes' IPv4 addresses).
	TargetNetwork netip.Prefix
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
		if !opts.TargetNetwork.IsValid() {
			return nil, errors.New("dataplane: pass-through needs the targets' network")
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

// passThrough reports whether spec is forwarded by nftables: pass-through
// is on, the VIP is IPv4, every target is in the target network, and
// neither a proxy (ipMode Proxy) nor a PROXY protocol header (which only a
// proxy can write) is asked for.
func (lb *loadBalancer) passThrough(spec Spec) bool {
	if lb.nft == nil || !spec.VIP.Is4() || spec.Proxy || spec.ProxyProtocol != "" {
		return false
	}
	for _, b := range spec.Backends {
		if !lb.opts.TargetNetwork.Contains(b.Address) {
			return false
		}
	}
	return true
}

// applyPassThroughLocked turns the load balancer's IPv4 VIP into (or keeps
// it) an nftables table; apply has closed its proxy listeners first.
func (lb *loadBalancer) applyPassThroughLocked() error {
	if !lb.passing {
		lb.passing = true
		lb.programmed = nil
	}
	lb.publishLocked()
	if lb.programmed == nil {
		// publishLocked logged it; apply returns it so the cloud marks the
		// load balancer in error and retries.
		return lb.programLocked(lb.snap.Load().healthy)
	}
	return nil
}

// programLocked commits the table for healthy, and forgets UDP flows to
// targets no longer in it.
func (lb *loadBalancer) programLocked(healthy []target) error {
	if err := lb.nft.apply(lb.ctx, nftScript(lb.spec, healthy, lb.opts.TargetNetwork)); err != nil {
		lb.programmed = nil
		return err
	}
	for _, old := range lb.programmed {
		if slices.ContainsFunc(healthy, func(t target) bool { return t.addr == old.addr }) {
			continue
		}
		for _, l := range lb.spec.Listeners {
			if proto(l.Protocol) == "udp" {
				lb.nft.forgetUDP(lb.ctx, lb.spec.VIP, l.Port, old.addr)
			}
		}
	}
	// Never nil once programmed, so apply knows the table exists.
	lb.programmed = append(make([]target, 0, len(healthy)), healthy...)
	return nil
}

// stopPassThroughLocked removes the load balancer's table. It runs when
// the manager closes too, so it does not use the load balancer's context.
func (lb *loadBalancer) stopPassThroughLocked() {
	lb.passing = false
	lb.programmed = nil
	if err := lb.nft.deleteTable(context.WithoutCancel(lb.ctx), lb.id); err != nil {
		lb.log.Error(err, "Removing the pass-through load balancer's table")
	}
}
