package server

import (
	"context"
	"net/netip"
	"time"

	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/dataplane"
)

// The data plane's namespace follows the cloud's route table at once on a
// change of it, and checks it every routeResync anyway (something else
// may have removed a route); a failed sync (a next hop not reachable yet)
// is retried after routeRetry.
const (
	routeResync = 30 * time.Second
	routeRetry  = 2 * time.Second
)

// followRoutes installs the route table in the data plane's namespace
// until ctx ends, so that the load balancers reach pod addresses as a
// VPC's do: through the routes Stratus' route controller made. The first
// sync removes what an earlier run left of routes gone since.
func (s *Server) followRoutes(ctx context.Context, dp *dataplane.Manager, done chan<- struct{}) {
	defer close(done)
	logger := klog.FromContext(ctx).WithName("routes")
	t := time.NewTimer(0)
	defer t.Stop()
	// A failure that repeats (a next hop the namespace cannot reach) is
	// logged as an error once, then quietly while it lasts.
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.routeKick:
		case <-t.C:
		}
		wait := routeResync
		if err := dp.SetRoutes(ctx, s.namespaceRoutes()); err != nil {
			if ctx.Err() != nil {
				return
			}
			if err.Error() != lastErr {
				logger.Error(err, "Routes not installed in the data plane's namespace; will retry", "retryIn", routeRetry)
			} else {
				logger.V(4).Info("Routes still not installed in the data plane's namespace", "err", err)
			}
			lastErr, wait = err.Error(), routeRetry
		} else {
			lastErr = ""
		}
		t.Reset(wait)
	}
}

// routesChanged wakes followRoutes; a wake-up already pending covers this one.
func (s *Server) routesChanged() {
	select {
	case s.routeKick <- struct{}{}:
	default:
	}
}

// namespaceRoutes is every cluster's active routes, each destination to
// its instance's internal address of the destination's family. One
// namespace serves every cluster: a destination two tables route goes by
// the first cluster's (by name), as AllRoutes sorts them.
func (s *Server) namespaceRoutes() []dataplane.Route {
	routes := s.store.AllRoutes()
	ids := make([]string, 0, len(routes))
	for _, r := range routes {
		ids = append(ids, r.InstanceID)
	}
	insts := s.store.InstancesByID(ids)
	seen := map[netip.Prefix]bool{}
	var out []dataplane.Route
	for _, r := range routes {
		dst, err := netip.ParsePrefix(r.DestinationCIDR)
		inst, ok := insts[r.InstanceID]
		if err != nil || !ok || r.State != api.RouteActive || seen[dst] {
			continue
		}
		hop := inst.Addresses.Internal
		if dst.Addr().Is6() {
			hop = inst.Addresses.Internal6
		}
		via, err := netip.ParseAddr(hop)
		if err != nil || via.Is4() != dst.Addr().Is4() {
			continue
		}
		seen[dst] = true
		out = append(out, dataplane.Route{Destination: dst, NextHop: via})
	}
	return out
}
