package dataplane

import (
	"net/netip"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// Endpoint targets: each listener has targets of its own (pod
// address:port pairs), so the routing state is per listener and VIP
// family rather than one list of instances. New connections go to the
// healthy ready endpoints, and to the healthy serving (terminating) ones
// only when none is ready (KEP-1672); a connection already made keeps its
// target (its conntrack entry, or the proxy's pipe) while the endpoint
// is handed over.

// listenerFamily is a listener of one VIP family: the key of its targets.
type listenerFamily struct {
	proto api.Protocol
	port  int
	six   bool
}

// targets are the targets a new connection to lf may go to.
func (s *snapshot) targets(lf listenerFamily) []target {
	if s.endpoints {
		return s.byListener[lf]
	}
	return s.healthy
}

// all is every target the snapshot keeps flows to, once: the healthy
// instances, or every healthy endpoint that is ready or serving (a
// serving-terminating endpoint gets no new flows while one is ready, but
// keeps those it has: only UDP flows to targets outside this list are
// forgotten).
func (s *snapshot) all() []target {
	if !s.endpoints {
		return s.healthy
	}
	return s.serving
}

// endpointTargetsLocked fills s with each listener's targets per family,
// in the listener's order of endpoints (which the caller keeps sorted, so
// that a rebuilt table keeps an affine client on its endpoint).
func (lb *loadBalancer) endpointTargetsLocked(s *snapshot) {
	s.endpoints = true
	s.byListener = map[listenerFamily][]target{}
	seen := map[string]bool{}
	up := lb.addressHealthLocked()
	for _, l := range lb.spec.Listeners {
		for _, six := range []bool{false, true} {
			var ready, serving []target
			for _, e := range l.Endpoints {
				a, err := netip.ParseAddr(e.Address)
				if err != nil || a.Is6() != six || !lb.endpointHealthyLocked(l.Protocol, e, a, up) {
					continue
				}
				t := target{id: e.AddrPort(), addr: a, port: e.Port}
				if (e.Ready || e.Serving) && !seen[t.id] {
					seen[t.id] = true
					s.serving = append(s.serving, t)
				}
				switch {
				case e.Ready:
					ready = append(ready, t)
				case e.Serving:
					serving = append(serving, t)
				}
			}
			if len(ready) == 0 {
				ready = serving
			}
			if len(ready) > 0 {
				s.byListener[listenerFamily{l.Protocol, l.Port, six}] = ready
			}
		}
	}
}

// addressHealthLocked says, for each address with a probed endpoint,
// whether one of them is healthy: what a UDP endpoint, which cannot be
// probed, follows, so that a pod the load balancer cannot reach (no
// route) gets no datagrams either.
func (lb *loadBalancer) addressHealthLocked() map[netip.Addr]bool {
	up := map[netip.Addr]bool{}
	for _, l := range lb.spec.Listeners {
		if l.Protocol != api.ProtocolTCP {
			continue
		}
		for _, e := range l.Endpoints {
			h := lb.hstate[e.AddrPort()]
			a, err := netip.ParseAddr(e.Address)
			if h == nil || err != nil {
				continue
			}
			up[a] = up[a] || h.healthy
		}
	}
	return up
}

// endpointHealthyLocked: a TCP endpoint is as its probes say; a UDP one
// as its address' TCP endpoints, healthy when it has none.
func (lb *loadBalancer) endpointHealthyLocked(p api.Protocol, e api.Endpoint, a netip.Addr, up map[netip.Addr]bool) bool {
	if p == api.ProtocolTCP {
		h := lb.hstate[e.AddrPort()]
		return h != nil && h.healthy
	}
	if ok, probed := up[a]; probed {
		return ok
	}
	return true
}

// endpointHealthLocked reports each endpoint's health by address:port
// (a TCP endpoint's when a UDP one has the same address and port).
func (lb *loadBalancer) endpointHealthLocked(out map[string]bool) {
	up := lb.addressHealthLocked()
	for _, tcp := range []bool{true, false} {
		for _, l := range lb.spec.Listeners {
			if (l.Protocol == api.ProtocolTCP) != tcp {
				continue
			}
			for _, e := range l.Endpoints {
				a, err := netip.ParseAddr(e.Address)
				if _, done := out[e.AddrPort()]; err == nil && !done {
					out[e.AddrPort()] = lb.endpointHealthyLocked(l.Protocol, e, a, up)
				}
			}
		}
	}
}
