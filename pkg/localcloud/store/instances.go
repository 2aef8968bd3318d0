package store

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// InstanceFilter selects instances in a list. Zero fields match everything;
// terminated instances are listed only when State asks for them.
type InstanceFilter struct {
	Name  string
	Tags  map[string]string
	State api.InstanceState
}

func (f InstanceFilter) match(inst *api.Instance) bool {
	if f.Name != "" && inst.Name != f.Name {
		return false
	}
	if f.State == "" && inst.State == api.InstanceTerminated {
		return false
	}
	if f.State != "" && inst.State != f.State {
		return false
	}
	return f.matchTags(inst)
}

func (f InstanceFilter) matchTags(inst *api.Instance) bool {
	for k, v := range f.Tags {
		if got, ok := inst.Tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// CreateInstances creates every instance of reqs in one transaction, or
// none: the quota, name uniqueness and address pools are checked for the
// whole batch first.
func (s *Store) CreateInstances(reqs []api.CreateInstanceRequest, quota int, now time.Time) ([]api.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.liveInstances+len(reqs) > quota {
		return nil, api.QuotaExceeded("instances", quota)
	}
	takenInt := map[netip.Addr]bool{}
	takenExt := map[netip.Addr]bool{}
	out := make([]*api.Instance, 0, len(reqs))
	for i, r := range reqs {
		if id, dup := s.instByName[r.Name]; dup {
			return nil, api.Conflict(fieldFor(len(reqs), i, "name"),
				fmt.Sprintf("an instance named %q already exists (%s)", r.Name, id))
		}
		inst, err := s.newInstance(r, takenInt, takenExt, now)
		if err != nil {
			return nil, err
		}
		out = append(out, inst)
	}
	if err := s.instances.save(s.db, out...); err != nil {
		return nil, err
	}
	res := make([]api.Instance, len(out))
	for i, inst := range out {
		s.indexInstance(inst)
		res[i] = *inst
	}
	return res, nil
}

func fieldFor(n, i int, f string) string {
	if n == 1 {
		return f
	}
	return fmt.Sprintf("instances[%d].%s", i, f)
}

func (s *Store) newInstance(r api.CreateInstanceRequest, takenInt, takenExt map[netip.Addr]bool, now time.Time) (*api.Instance, error) {
	ip, err := s.internalAddress(r, takenInt)
	if err != nil {
		return nil, err
	}
	takenInt[ip] = true
	inst := &api.Instance{
		ID: newID("i"), Name: r.Name, Zone: r.Zone, Region: r.Region, Type: r.Type,
		State: api.InstanceRunning, Tags: r.Tags, CreatedAt: now.UTC(),
		Addresses: api.Addresses{Internal: ip.String(), Hostname: r.Name},
	}
	if r.InternalAddress6 != "" {
		// Held in the internal pool's record of used addresses too, so
		// that no two live instances share one.
		ip6, err := netip.ParseAddr(r.InternalAddress6)
		if err != nil {
			return nil, api.Invalid("internalAddress6", fmt.Sprintf("%q is not an IP address", r.InternalAddress6))
		}
		if s.internal.used[ip6] || takenInt[ip6] {
			return nil, api.Conflict("internalAddress6", fmt.Sprintf("%s is held by another instance", ip6))
		}
		takenInt[ip6] = true
		inst.Addresses.Internal6 = ip6.String()
	}
	if r.External {
		ext, err := s.external.next(takenExt)
		if err != nil {
			return nil, poolErr(err, "external")
		}
		takenExt[ext] = true
		inst.Addresses.External = ext.String()
	}
	return inst, nil
}

// internalAddress is the address the request asks for, if free, else the
// internal pool's next.
func (s *Store) internalAddress(r api.CreateInstanceRequest, taken map[netip.Addr]bool) (netip.Addr, error) {
	if r.InternalAddress == "" {
		ip, err := s.internal.next(taken)
		if err != nil {
			return netip.Addr{}, poolErr(err, "internal")
		}
		return ip, nil
	}
	ip, err := netip.ParseAddr(r.InternalAddress)
	if err != nil {
		return netip.Addr{}, api.Invalid("internalAddress", fmt.Sprintf("%q is not an IP address", r.InternalAddress))
	}
	if s.internal.used[ip] || taken[ip] {
		return netip.Addr{}, api.Conflict("internalAddress", fmt.Sprintf("%s is held by another instance", ip))
	}
	return ip, nil
}

// GetInstance returns one instance, terminated ones included.
func (s *Store) GetInstance(id string) (api.Instance, error) {
	return read(s, s.instances, id)
}

// ListInstances returns one page of the instances matching f, in id order.
func (s *Store) ListInstances(f InstanceFilter, token string, limit int) ([]api.Instance, string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var keys []string
	if f.Name != "" && f.State != api.InstanceTerminated {
		// The name index makes the node-name lookup O(1) at any fleet size.
		if id, ok := s.instByName[f.Name]; ok && f.match(s.instances.items[id]) {
			keys = []string{id}
		}
	} else {
		keys = s.instances.matching(f.match)
	}
	return s.instances.page(keys, token, limit)
}

// SetInstanceState moves an instance to state. Repeating a transition is
// a no-op; nothing leaves the terminated state.
func (s *Store) SetInstanceState(id string, state api.InstanceState) (api.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.instances.get(id)
	if err != nil {
		return api.Instance{}, err
	}
	if cur.State == state {
		return *cur, nil
	}
	if cur.State == api.InstanceTerminated {
		return api.Instance{}, api.Conflict("state", fmt.Sprintf("instance %s is terminated", id))
	}
	next := *cur
	next.State = state
	if err := s.instances.save(s.db, &next); err != nil {
		return api.Instance{}, err
	}
	s.indexInstance(&next)
	return next, nil
}

// InstancesByID returns the instances with the given ids that exist.
func (s *Store) InstancesByID(ids []string) map[string]api.Instance {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]api.Instance, len(ids))
	for _, id := range ids {
		if inst, ok := s.instances.items[id]; ok {
			out[id] = *inst
		}
	}
	return out
}
