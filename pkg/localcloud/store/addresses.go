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
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.liveInstanceLocked(id)
	if err != nil {
		return api.Instance{}, err
	}
	if cur.Addresses.External != "" {
		return api.Instance{}, api.Conflict(fieldExternal,
			fmt.Sprintf("instance %s already has external address %s", id, cur.Addresses.External))
	}
	ext, err := s.external.next(nil)
	if err != nil {
		return api.Instance{}, poolErr(err, "external")
	}
	next := *cur
	next.Addresses.External = ext.String()
	if err := s.put(bucketInstances, map[string]any{id: &next}); err != nil {
		return api.Instance{}, err
	}
	// Only the external pool changes: re-indexing the whole instance would
	// also move the internal pool's cursor back to this instance's address.
	s.instances[id] = &next
	s.external.use(next.Addresses.External)
	return next, nil
}

// DetachExternalAddress releases an instance's external address back to
// the pool.
func (s *Store) DetachExternalAddress(id string) (api.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.liveInstanceLocked(id)
	if err != nil {
		return api.Instance{}, err
	}
	if cur.Addresses.External == "" {
		return api.Instance{}, api.NotFound(fieldExternal, fmt.Sprintf("instance %s has no external address", id))
	}
	next := *cur
	next.Addresses.External = ""
	if err := s.put(bucketInstances, map[string]any{id: &next}); err != nil {
		return api.Instance{}, err
	}
	s.instances[id] = &next
	s.external.release(cur.Addresses.External)
	return next, nil
}

// liveInstanceLocked returns a non-terminated instance; s.mu must be held.
// A terminated instance keeps its record (addresses included, for the
// record) but its addresses are back in the pools, so changing them would
// hand out or free an address it no longer owns.
func (s *Store) liveInstanceLocked(id string) (*api.Instance, error) {
	cur, ok := s.instances[id]
	if !ok {
		return nil, api.NotFound("id", fmt.Sprintf("instance %s not found", id))
	}
	if cur.State == api.InstanceTerminated {
		return nil, api.Conflict("state", fmt.Sprintf("instance %s is terminated", id))
	}
	return cur, nil
}
