package store

import (
	"fmt"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// fieldExternal names the external address in errors, as the JSON path of
// the instance field it is about.
const fieldExternal = "addresses.external"

// AttachExternalAddress gives a running or stopped instance an address
// from the external pool, as attaching an elastic/public IP does in a real
// cloud. An instance holds at most one; a terminated one gets none.
func (s *Store) AttachExternalAddress(id string) (api.Instance, error) {
	return s.changeExternal(id, func(inst *api.Instance) error {
		if inst.Addresses.External != "" {
			return api.Conflict(fieldExternal,
				fmt.Sprintf("instance %s already has external address %s", id, inst.Addresses.External))
		}
		ext, err := s.external.next(nil)
		if err != nil {
			return poolErr(err, "external")
		}
		inst.Addresses.External = ext.String()
		return nil
	})
}

// DetachExternalAddress releases an instance's external address back to
// the pool.
func (s *Store) DetachExternalAddress(id string) (api.Instance, error) {
	return s.changeExternal(id, func(inst *api.Instance) error {
		if inst.Addresses.External == "" {
			return api.NotFound(fieldExternal, fmt.Sprintf("instance %s has no external address", id))
		}
		inst.Addresses.External = ""
		return nil
	})
}

// changeExternal applies change to a copy of a live instance, commits it
// and moves the external address in the pool from the old to the new.
// Only the external pool changes: re-indexing the whole instance would
// also move the internal pool's cursor back to this instance's address.
func (s *Store) changeExternal(id string, change func(*api.Instance) error) (api.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.liveInstanceLocked(id)
	if err != nil {
		return api.Instance{}, err
	}
	next := *cur
	if err := change(&next); err != nil {
		return api.Instance{}, err
	}
	if err := s.instances.save(s.db, &next); err != nil {
		return api.Instance{}, err
	}
	s.instances.items[id] = &next
	s.external.release(cur.Addresses.External)
	s.external.use(next.Addresses.External)
	return next, nil
}

// liveInstanceLocked returns a non-terminated instance; s.mu must be held.
// A terminated instance keeps its record (addresses included, for the
// record) but its addresses are back in the pools, so changing them would
// hand out or free an address it no longer owns.
func (s *Store) liveInstanceLocked(id string) (*api.Instance, error) {
	cur, err := s.instances.get(id)
	if err != nil {
		return nil, err
	}
	if cur.State == api.InstanceTerminated {
		return nil, api.Conflict("state", fmt.Sprintf("instance %s is terminated", id))
	}
	return cur, nil
}
