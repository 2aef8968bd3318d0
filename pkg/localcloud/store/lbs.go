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
		inst, ok := s.instances[id]
		if !ok || inst.State == api.InstanceTerminated {
			return api.Invalid(fmt.Sprintf("backends[%d]", i), fmt.Sprintf("instance %s does not exist", id))
		}
	}
	return nil
}

// CreateLB creates a load balancer in the provisioning state, ready at readyAt.
func (s *Store) CreateLB(r api.CreateLoadBalancerRequest, quota int, now, readyAt time.Time) (api.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, dup := s.lbByName[r.Cluster+"/"+r.Name]; dup {
		return api.LoadBalancer{}, api.Conflict("name",
			fmt.Sprintf("load balancer %q already exists in cluster %q (%s)", r.Name, r.Cluster, id))
	}
	if len(s.lbs) >= quota {
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
		ReadyAt: readyAt.UTC(), CreatedAt: now.UTC(), UpdatedAt: now.UTC(),
	}
	if err := s.put(bucketLBs, map[string]any{lb.ID: lb}); err != nil {
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	lb, ok := s.lbs[id]
	if !ok {
		return api.LoadBalancer{}, api.NotFound("id", fmt.Sprintf("load balancer %s not found", id))
	}
	return *lb, nil
}

// ListLBs returns one page of the load balancers matching f, in id order.
func (s *Store) ListLBs(f LBFilter, token string, limit int) ([]api.LoadBalancer, string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]string, 0, len(s.lbs))
	for id, lb := range s.lbs {
		if f.match(lb) {
			keys = append(keys, id)
		}
	}
	ids, next, err := page(keys, token, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]api.LoadBalancer, len(ids))
	for i, id := range ids {
		out[i] = *s.lbs[id]
	}
	return out, next, nil
}

// UpdateLB replaces the spec of a load balancer that is not being deleted.
func (s *Store) UpdateLB(id string, spec api.LoadBalancerSpec, now time.Time) (api.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.lbs[id]
	if !ok {
		return api.LoadBalancer{}, api.NotFound("id", fmt.Sprintf("load balancer %s not found", id))
	}
	if cur.Status == api.LBDeleting {
		return api.LoadBalancer{}, api.Conflict("status", fmt.Sprintf("load balancer %s is being deleted", id))
	}
	if err := s.checkBackends(spec.Backends); err != nil {
		return api.LoadBalancer{}, err
	}
	next := *cur
	next.LoadBalancerSpec = cloneSpec(spec)
	next.UpdatedAt = now.UTC()
	return s.replaceLB(&next)
}

func (s *Store) replaceLB(lb *api.LoadBalancer) (api.LoadBalancer, error) {
	if err := s.put(bucketLBs, map[string]any{lb.ID: lb}); err != nil {
		return api.LoadBalancer{}, err
	}
	s.lbs[lb.ID] = lb
	return *lb, nil
}

// SetLBStatus moves a load balancer to status with a new ReadyAt. Moving
// to provisioning-done (active) only happens from provisioning, so a timer
// that fires late cannot resurrect a deleting load balancer.
func (s *Store) SetLBStatus(id string, status api.LBStatus, readyAt time.Time) (api.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.lbs[id]
	if !ok {
		return api.LoadBalancer{}, api.NotFound("id", fmt.Sprintf("load balancer %s not found", id))
	}
	if cur.Status == status {
		return *cur, nil
	}
	if status == api.LBActive && cur.Status != api.LBProvisioning && cur.Status != api.LBError {
		return api.LoadBalancer{}, api.Conflict("status", fmt.Sprintf("load balancer %s is %s", id, cur.Status))
	}
	next := *cur
	next.Status = status
	next.StatusMessage = ""
	next.ReadyAt = readyAt.UTC()
	return s.replaceLB(&next)
}

// SetLBError marks a load balancer in error with the reason: an active or
// already failed one, or one whose provisioning ends in a failure; one
// being deleted is left alone.
func (s *Store) SetLBError(id, reason string) (api.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.lbs[id]
	if !ok {
		return api.LoadBalancer{}, api.NotFound("id", fmt.Sprintf("load balancer %s not found", id))
	}
	if cur.Status == api.LBDeleting {
		return api.LoadBalancer{}, api.Conflict("status", fmt.Sprintf("load balancer %s is %s", id, cur.Status))
	}
	if cur.Status == api.LBError && cur.StatusMessage == reason {
		return *cur, nil
	}
	next := *cur
	next.Status = api.LBError
	next.StatusMessage = reason
	next.ReadyAt = time.Time{}
	return s.replaceLB(&next)
}

// RemoveLB deletes the record of a load balancer and frees its VIP.
func (s *Store) RemoveLB(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.lbs[id]
	if !ok {
		return nil
	}
	if err := s.put(bucketLBs, nil, id); err != nil {
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
	out := make([]api.LoadBalancer, 0, len(s.lbs))
	for _, lb := range s.lbs {
		out = append(out, *lb)
	}
	return out
}
