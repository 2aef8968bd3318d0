package server

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/dataplane"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
)

// createLB answers with the load balancer already active when there is
// no provisioning delay, else arms the timer that activates it.
func (s *Server) createLB(r *http.Request) (int, any, error) {
	return withBody(http.StatusCreated, (*api.CreateLoadBalancerRequest).Validate,
		func(req api.CreateLoadBalancerRequest) (api.LoadBalancer, error) {
			k := s.knobs.get()
			now := time.Now()
			lb, err := s.store.CreateLB(req, k.Quotas.LoadBalancers, now, now.Add(time.Duration(k.LBProvisioningTime)), caller(r))
			if err != nil {
				return lb, err
			}
			if k.LBProvisioningTime == 0 {
				return s.activate(lb.ID), nil
			}
			s.schedule(lb)
			return lb, nil
		})(r)
}

func (s *Server) listLBs() endpoint {
	return listing(func(q url.Values, tags map[string]string) (store.LBFilter, error) {
		return store.LBFilter{Cluster: q.Get("cluster"), Name: q.Get("name"), Tags: tags}, nil
	}, s.store.ListLBs, func(items []api.LoadBalancer, next string) any {
		return api.LoadBalancerList{Items: items, NextPageToken: next}
	})
}

// updateLB reprograms the data plane of a load balancer that forwards (or
// tried to) with the new spec. The id is checked before the body.
func (s *Server) updateLB(r *http.Request) (int, any, error) {
	return onID("lb", http.StatusOK, func(id string) (api.LoadBalancer, error) {
		req, err := readBody(r, (*api.UpdateLoadBalancerRequest).Validate)
		if err != nil {
			return api.LoadBalancer{}, err
		}
		lb, err := s.store.UpdateLB(id, req.LoadBalancerSpec, time.Now(), caller(r))
		if err == nil && (lb.Status == api.LBActive || lb.Status == api.LBError) {
			lb = s.program(r.Context(), lb)
		}
		return lb, err
	})(r)
}

// deleteLB stops forwarding at once and removes the record after the
// deletion time; deleting an already deleting load balancer is accepted.
func (s *Server) deleteLB(id string) (api.LoadBalancer, error) {
	wait := time.Duration(s.knobs.get().LBDeletionTime)
	lb, err := s.store.SetLBStatus(id, api.LBDeleting, time.Now().Add(wait))
	if err != nil {
		return lb, err
	}
	s.mu.Lock()
	dp := s.dp
	s.mu.Unlock()
	if dp != nil {
		dp.Remove(id)
	}
	s.schedule(lb)
	return lb, nil
}

// schedule arms the timer that moves a load balancer to its next state at
// ReadyAt. ReadyAt is stored, so resume can re-arm it after a restart.
func (s *Server) schedule(lb api.LoadBalancer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if t, ok := s.timers[lb.ID]; ok {
		t.Stop()
	}
	id, status := lb.ID, lb.Status
	s.armLocked(id, time.Until(lb.ReadyAt), func() {
		switch status {
		case api.LBProvisioning:
			s.activate(id)
		case api.LBDeleting:
			if err := s.store.RemoveLB(id); err != nil {
				klog.FromContext(s.baseCtx()).Error(err, "Removing deleted load balancer", "loadBalancer", id)
			}
		case api.LBActive, api.LBError:
			// Settled states have no timer.
		}
	})
}

// activate moves a provisioning load balancer to active and starts
// forwarding. The VIP is bound before the record says active, so a client
// that sees the load balancer active can connect at once; one that cannot
// bind goes straight to error. A load balancer deleted meanwhile is left
// alone, and forwarding started for it stopped.
func (s *Server) activate(id string) api.LoadBalancer {
	ctx := s.baseCtx()
	logger := klog.FromContext(ctx).WithValues("loadBalancer", id)
	lb, err := s.store.GetLB(id)
	if err != nil || lb.Status != api.LBProvisioning {
		logger.V(2).Info("Load balancer not activated", "status", lb.Status, "err", err)
		return lb
	}
	s.mu.Lock()
	dp := s.dp
	s.mu.Unlock()
	if dp == nil {
		active, err := s.store.SetLBStatus(id, api.LBActive, time.Time{})
		if err != nil {
			return lb
		}
		return active
	}
	spec := s.dataplaneSpec(lb)
	bindErr := dp.Apply(spec)
	var next api.LoadBalancer
	if bindErr != nil {
		next, err = s.store.SetLBError(id, bindMessage(bindErr))
	} else {
		next, err = s.store.SetLBStatus(id, api.LBActive, time.Time{})
	}
	if err != nil {
		dp.Remove(id)
		logger.V(2).Info("Load balancer not activated", "err", err)
		return lb
	}
	if bindErr != nil {
		logger.Error(bindErr, "Load balancer cannot bind its VIP; will retry", "vip", lb.VIP, "vip6", lb.VIP6, "retryIn", s.cfg.BindRetryInterval)
		s.retryBind(id)
		return next
	}
	if !reflect.DeepEqual(s.dataplaneSpec(next), spec) {
		// Updated while it was being bound: bring the data plane to the new spec.
		return s.program(ctx, next)
	}
	return next
}

// program brings the data plane to the load balancer's current spec and
// returns the record as it then is: a VIP:port that cannot be bound puts
// the load balancer in error with the reason (the listeners that did bind
// keep forwarding), and a retry is armed; a successful bind of a failed
// load balancer makes it active again.
func (s *Server) program(ctx context.Context, lb api.LoadBalancer) api.LoadBalancer {
	s.mu.Lock()
	dp := s.dp
	s.mu.Unlock()
	if dp == nil {
		return lb
	}
	return s.recordBind(ctx, lb, dp.Apply(s.dataplaneSpec(lb)))
}

func (s *Server) recordBind(ctx context.Context, lb api.LoadBalancer, bindErr error) api.LoadBalancer {
	logger := klog.FromContext(ctx).WithValues("loadBalancer", lb.ID, "vip", lb.VIP, "vip6", lb.VIP6)
	if bindErr != nil {
		logger.Error(bindErr, "Load balancer cannot bind its VIP; will retry", "retryIn", s.cfg.BindRetryInterval)
		failed, err := s.store.SetLBError(lb.ID, bindMessage(bindErr))
		if err != nil {
			logger.V(2).Info("Load balancer error not recorded", "err", err)
			return lb
		}
		s.retryBind(lb.ID)
		return failed
	}
	if lb.Status != api.LBError {
		return lb
	}
	active, err := s.store.SetLBStatus(lb.ID, api.LBActive, time.Time{})
	if err != nil {
		logger.V(2).Info("Load balancer not reactivated", "err", err)
		return lb
	}
	logger.Info("Load balancer bound its VIP after an error")
	return active
}

// retryBind programs a load balancer in error again after the retry
// interval, as a cloud keeps reconciling its data plane.
func (s *Server) retryBind(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := id + "/bind"
	if _, armed := s.timers[key]; armed || s.closed {
		return
	}
	s.armLocked(key, s.cfg.BindRetryInterval, func() {
		if lb, err := s.store.GetLB(id); err == nil && lb.Status == api.LBError {
			s.program(s.baseCtx(), lb)
		}
	})
}

// armLocked runs f after d unless the server closes first, keeping the
// timer under key so that Close stops it; s.mu must be held.
func (s *Server) armLocked(key string, d time.Duration, f func()) {
	s.timers[key] = time.AfterFunc(d, func() {
		s.mu.Lock()
		delete(s.timers, key)
		closed := s.closed
		s.mu.Unlock()
		if !closed {
			f()
		}
	})
}

func (s *Server) dataplaneSpec(lb api.LoadBalancer) dataplane.Spec {
	insts := s.store.InstancesByID(lb.Backends)
	spec := dataplane.Spec{
		ID: lb.ID, VIP: parseAddr(lb.VIP), VIP6: parseAddr(lb.VIP6), Listeners: lb.Listeners, HealthCheck: lb.HealthCheck,
		UDPIdleTimeout:  time.Duration(lb.UDPIdleTimeoutMs) * time.Millisecond,
		ClientAffinity:  lb.SessionAffinity == api.SessionAffinityClientIP,
		ProxyProtocol:   lb.ProxyProtocol,
		Proxy:           lb.Proxy || lb.ProxyProtocol != "",
		EndpointTargets: lb.EndpointTargets(),
	}
	for _, id := range lb.Backends {
		inst, ok := insts[id]
		spec.Backends = append(spec.Backends, dataplane.Backend{
			ID: id, Address: parseAddr(inst.Addresses.Internal), Address6: parseAddr(inst.Addresses.Internal6),
			Up: ok && inst.State == api.InstanceRunning,
		})
	}
	for _, c := range lb.SourceRanges {
		if p, err := netip.ParsePrefix(c); err == nil {
			spec.SourceRanges = append(spec.SourceRanges, p)
		}
	}
	return spec
}

// refreshLBsWithBackend reprograms active load balancers that use an
// instance whose state changed.
func (s *Server) refreshLBsWithBackend(ctx context.Context, instanceID string) {
	for _, lb := range s.store.AllLBs() {
		if (lb.Status == api.LBActive || lb.Status == api.LBError) && slices.Contains(lb.Backends, instanceID) {
			s.program(ctx, lb)
		}
	}
}

// resumeLocked re-arms timers and restarts forwarding after a restart.
// Called from Start with s.mu held, so it takes the data plane directly.
func (s *Server) resumeLocked() {
	for _, lb := range s.store.AllLBs() {
		switch lb.Status {
		case api.LBActive, api.LBError:
			bindErr := s.dp.Apply(s.dataplaneSpec(lb))
			// recordBind arms timers, which takes s.mu: run it after Start.
			go s.recordBind(s.ctx, lb, bindErr)
		default:
			go s.schedule(lb)
		}
	}
}

// bindMessage is a load balancer's status message for a bind error: one
// line (listeners that failed together are joined by newlines), as the
// message ends up in a table row and a Service's event.
func bindMessage(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
