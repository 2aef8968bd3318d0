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
	vip, vip6, err := s.vipsFor(&r.LoadBalancerSpec, "", "", r.VIP, r.VIP6)
	if err != nil {
		return api.LoadBalancer{}, err
	}
	lb := &api.LoadBalancer{
		ID: newID("lb"), Name: r.Name, Cluster: r.Cluster, Tags: r.Tags,
		LoadBalancerSpec: cloneSpec(r.LoadBalancerSpec),
		Status:           api.LBProvisioning, VIP: vip, VIP6: vip6,
		ReadyAt: readyAt.UTC(), CreatedAt: now.UTC(), UpdatedAt: now.UTC(), UpdatedBy: by,
	}
	if err := s.lbs.save(s.db, lb); err != nil {
		return api.LoadBalancer{}, err
	}
	s.indexLB(lb)
	return *lb, nil
}

// vipsFor returns a load balancer's VIPs for spec's families: the one it
// has (cur, cur6) of a family it keeps, else the requested one, else the
// pool's next free address; none of a family it does not have. Nothing is
// marked used: the caller's index does that once the record is saved.
func (s *Store) vipsFor(spec *api.LoadBalancerSpec, cur, cur6, requested, requested6 string) (vip, vip6 string, err error) {
	if spec.Has(api.IPv4) {
		if vip = cur; vip == "" {
			a, err := vipFrom(s.vips, "vip", requested)
			if err != nil {
				return "", "", err
			}
			vip = a.String()
		}
	}
	if spec.Has(api.IPv6) {
		if s.vips6 == nil {
			return "", "", api.Invalid("ipFamilies", fmt.Sprintf("%v: this cloud has no IPv6 VIP pool (localcloud serve --vip6-pool)", spec.IPFamilies))
		}
		if vip6 = cur6; vip6 == "" {
			a, err := vipFrom(s.vips6, "vip6", requested6)
			if err != nil {
				return "", "", err
			}
			vip6 = a.String()
		}
	}
	return vip, vip6, nil
}

// vipFrom returns the requested VIP when it is a free address of the pool,
// or the pool's next free address when none is requested.
func vipFrom(pool *allocator, field, requested string) (netip.Addr, error) {
	if requested == "" {
		vip, err := pool.next(nil)
		return vip, poolErr(err, field)
	}
	vip, err := netip.ParseAddr(requested)
	if err != nil {
		return netip.Addr{}, api.Invalid(field, fmt.Sprintf("%q is not an IP address", requested))
	}
	if !pool.usable(vip) {
		return netip.Addr{}, api.Invalid(field, fmt.Sprintf("%s is not a usable address of the VIP pool %s", vip, pool.prefix))
	}
	if pool.used[vip] {
		return netip.Addr{}, api.Invalid(field, fmt.Sprintf("%s is already the VIP of another load balancer", vip))
	}
	return vip, nil
}

func cloneSpec(sp api.LoadBalancerSpec) api.LoadBalancerSpec {
	sp.Listeners = slices.Clone(sp.Listeners)
	for i := range sp.Listeners {
		sp.Listeners[i].Endpoints = slices.Clone(sp.Listeners[i].Endpoints)
	}
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
		// A family added gets a VIP, a family removed gives its VIP back
		// (changeLB re-indexes them), a family kept keeps its VIP.
		vip, vip6, err := s.vipsFor(&spec, lb.VIP, lb.VIP6, "", "")
		if err != nil {
			return false, err
		}
		lb.VIP, lb.VIP6 = vip, vip6
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
	if cur.VIP != next.VIP {
		s.vips.release(cur.VIP)
		s.vips.use(next.VIP)
	}
	if cur.VIP6 != next.VIP6 && s.vips6 != nil {
		s.vips6.release(cur.VIP6)
		s.vips6.use(next.VIP6)
	}
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
