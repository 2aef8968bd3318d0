package store

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// LBFilter selects load balancers in a list; zero fields match everything.
type LBFilter struct {
	Cluster string
	Name    string
	Tags    map[string]string
}

func (f LBFilter) match(lb *api.LoadBalancer) bool {
	if f.Cluster != "" && lb.Cluster != f.Cluster {
		return false
	}
	if f.Name != "" && lb.Name != f.Name {
		return false
	}
	for k, v := range f.Tags {
		if got, ok := lb.Tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// checkBackends rejects ids of instances that do not exist or are
// terminated, naming the offending entry. Stopped instances are accepted:
// they are merely unhealthy.
func (s *Store) checkBackends(ids []string) error {
	for i, id := range ids {
		inst, ok := s.instances.items[id]
		if !ok || inst.State == api.InstanceTerminated {
			return api.Invalid(fmt.Sprintf("backends[%d]", i), fmt.Sprintf("instance %s does not exist", id))
		}
	}
	return nil
}

// CreateLB creates a load balancer in the provisioning state, ready at
// readyAt; by is the caller, recorded as who last set it.
func (s *Store) CreateLB(r api.CreateLoadBalancerRequest, quota int, now, readyAt time.Time, by string) (api.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, dup := s.lbByName[r.Cluster+"/"+r.Name]; dup {
		return api.LoadBalancer{}, api.Conflict("name",
			fmt.Sprintf("load balancer %q already exists in cluster %q (%s)", r.Name, r.Cluster, id))
	}
	if len(s.lbs.items) >= quota {
		return api.LoadBalancer{}, api.QuotaExceeded("loadBalancers", quota)
	}
	if err := s.checkBackends(r.Backends); err != nil {
		return api.LoadBalancer{}, err
	}
	vip, err := s.vipFor(r.VIP)
	if err != nil {
		return api.LoadBalancer{}, err
	}
	lb := &api.LoadBalancer{
		ID: newID("lb"), Name: r.Name, Cluster: r.Cluster, Tags: r.Tags,
		LoadBalancerSpec: cloneSpec(r.LoadBalancerSpec),
		Status:           api.LBProvisioning, VIP: vip.String(),
		ReadyAt: readyAt.UTC(), CreatedAt: now.UTC(), UpdatedAt: now.UTC(), UpdatedBy: by,
	}
	if err := s.lbs.save(s.db, lb); err != nil {
		return api.LoadBalancer{}, err
	}
	s.indexLB(lb)
	return *lb, nil
}

// vipFor returns the requested VIP when it is a free address of the pool,
// or the pool's next free address when none is requested.
func (s *Store) vipFor(requested string) (netip.Addr, error) {
	if requested == "" {
		vip, err := s.vips.next(nil)
		return vip, poolErr(err, "vip")
	}
	vip, err := netip.ParseAddr(requested)
	if err != nil {
		return netip.Addr{}, api.Invalid("vip", fmt.Sprintf("%q is not an IP address", requested))
	}
	if !s.vips.usable(vip) {
		return netip.Addr{}, api.Invalid("vip", fmt.Sprintf("%s is not a usable address of the VIP pool %s", vip, s.vips.prefix))
	}
	if s.vips.used[vip] {
		return netip.Addr{}, api.Invalid("vip", fmt.Sprintf("%s is already the VIP of another load balancer", vip))
	}
	return vip, nil
}

func cloneSpec(sp api.LoadBalancerSpec) api.LoadBalancerSpec {
	sp.Listeners = slices.Clone(sp.Listeners)
	sp.Backends = slices.Clone(sp.Backends)
	sp.SourceRanges = slices.Clone(sp.SourceRanges)
	if sp.Backends == nil {
		sp.Backends = []string{}
	}
	return sp
}

// GetLB returns one load balancer.
func (s *Store) GetLB(id string) (api.LoadBalancer, error) {
	return read(s, s.lbs, id)
}

// ListLBs returns one page of the load balancers matching f, in id order.
func (s *Store) ListLBs(f LBFilter, token string, limit int) ([]api.LoadBalancer, string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lbs.page(s.lbs.matching(f.match), token, limit)
}

// UpdateLB replaces the spec of a load balancer that is not being deleted;
// by is the caller, recorded as who last set it.
func (s *Store) UpdateLB(id string, spec api.LoadBalancerSpec, now time.Time, by string) (api.LoadBalancer, error) {
	return s.changeLB(id, func(lb *api.LoadBalancer) (bool, error) {
		if lb.Status == api.LBDeleting {
			return false, api.Conflict("status", fmt.Sprintf("load balancer %s is being deleted", id))
		}
		if err := s.checkBackends(spec.Backends); err != nil {
			return false, err
		}
		lb.LoadBalancerSpec = cloneSpec(spec)
		lb.UpdatedAt, lb.UpdatedBy = now.UTC(), by
		return true, nil
	})
}

// SetLBStatus moves a load balancer to status with a new ReadyAt. Moving
// to provisioning-done (active) only happens from provisioning, so a timer
// that fires late cannot resurrect a deleting load balancer.
func (s *Store) SetLBStatus(id string, status api.LBStatus, readyAt time.Time) (api.LoadBalancer, error) {
	return s.changeLB(id, func(lb *api.LoadBalancer) (bool, error) {
		if lb.Status == status {
			return false, nil
		}
		if status == api.LBActive && lb.Status != api.LBProvisioning && lb.Status != api.LBError {
			return false, api.Conflict("status", fmt.Sprintf("load balancer %s is %s", id, lb.Status))
		}
		lb.Status = status
		lb.StatusMessage = ""
		lb.ReadyAt = readyAt.UTC()
		return true, nil
	})
}

// SetLBError marks a load balancer in error with the reason: an active or
// already failed one, or one whose provisioning ends in a failure; one
// being deleted is left alone.
func (s *Store) SetLBError(id, reason string) (api.LoadBalancer, error) {
	return s.changeLB(id, func(lb *api.LoadBalancer) (bool, error) {
		if lb.Status == api.LBDeleting {
			return false, api.Conflict("status", fmt.Sprintf("load balancer %s is %s", id, lb.Status))
		}
		if lb.Status == api.LBError && lb.StatusMessage == reason {
			return false, nil
		}
		lb.Status = api.LBError
		lb.StatusMessage = reason
		lb.ReadyAt = time.Time{}
		return true, nil
	})
}

// changeLB applies change to a copy of a load balancer under the lock and
// commits the copy when change reports a change; a change that fails or
// is already in place returns the record as it is, unwritten.
func (s *Store) changeLB(id string, change func(*api.LoadBalancer) (bool, error)) (api.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.lbs.get(id)
	if err != nil {
		return api.LoadBalancer{}, err
	}
	next := *cur
	changed, err := change(&next)
	if err != nil {
		return api.LoadBalancer{}, err
	}
	if !changed {
		return *cur, nil
	}
	if err := s.lbs.save(s.db, &next); err != nil {
		return api.LoadBalancer{}, err
	}
	s.lbs.items[id] = &next
	return next, nil
}

// RemoveLB deletes the record of a load balancer and frees its VIP.
func (s *Store) RemoveLB(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.lbs.items[id]
	if !ok {
		return nil
	}
	if err := s.lbs.remove(s.db, id); err != nil {
		return err
	}
	s.unindexLB(cur)
	return nil
}

// AllLBs returns every load balancer, for resuming timers and the data
// plane after a restart.
func (s *Store) AllLBs() []api.LoadBalancer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lbs.all()
}
