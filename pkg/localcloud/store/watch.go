package store

import (
	"sort"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// bumpLocked marks a change of the instances; s.mu must be held.
func (s *Store) bumpLocked() {
	s.generation++
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
}

// InstanceGeneration returns the generation of the instances (it grows
// with every create and state change) and a channel closed at the next
// change, so that a watcher waits without polling.
func (s *Store) InstanceGeneration() (uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.generation, s.changed
}

// SnapshotInstances returns every instance carrying tags, terminated ones
// included, sorted by name, with the generation they are current at.
func (s *Store) SnapshotInstances(tags map[string]string) (uint64, []api.Instance) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f := InstanceFilter{Tags: tags}
	var out []api.Instance
	for _, inst := range s.instances.items {
		if f.matchTags(inst) {
			out = append(out, *inst)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].CreatedAt.Before(out[j].CreatedAt)
	})
	return s.generation, out
}
