package service

import (
	"context"
	"hash/fnv"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// repairDrift compares the cluster's load balancers, as the orphan pass
// just listed them, with what the controller last applied, and sends every
// Service whose load balancer was deleted or had its backends changed in
// the cloud behind the controller's back to a full ensure: its recorded
// state is dropped and the Service queued. before is the state taken
// before the list began, so a load balancer ensured while the list was in
// flight is not mistaken for a deleted one.
//
// A provider may leave nodes out of a load balancer on its own account (a
// node whose instance it cannot find or whose providerID it cannot parse):
// the cloud's backends then differ from the applied nodes however often
// the Service is ensured. So a difference is repaired once; when the next
// pass finds the very same difference (the same nodes missing, the same
// extra backends), that is what the provider makes of those nodes, not
// drift, and it is left alone while the difference stays the same.
func (c *Controller) repairDrift(ctx context.Context, before map[types.NamespacedName]*lbState, lbs []cloud.LoadBalancer) int {
	byUID := make(map[types.UID]cloud.LoadBalancer, len(lbs))
	for _, lb := range lbs {
		if lb.ServiceUID != "" {
			byUID[lb.ServiceUID] = lb
		}
	}
	logger := klog.FromContext(ctx)
	drifted := 0
	sets := appliedSets{}
	last := c.driftRepaired.take()
	for k, st := range before {
		lb, exists := byUID[st.uid]
		why := ""
		switch {
		case !exists:
			why = "load balancer no longer exists in the cloud"
		case st.targets == targetEndpoints:
			// Its backends are endpoints, not nodes; only its existence
			// is checked.
			continue
		case lb.Backends != nil && !sets.of(st.nodes).equals(lb.Backends):
			fp := differenceOf(st.nodes, lb.Backends)
			if last.holds(k, fp) {
				// Ensured once already and the cloud answered the same:
				// the provider's own choice of backends.
				c.driftRepaired.accept(k, fp)
				continue
			}
			if a, ok := last.accepted[k]; ok {
				// A repair of other drift will bring back the provider's
				// choice: still its choice after the repair.
				c.driftRepaired.accept(k, a)
			}
			c.driftRepaired.repairing(k, fp)
			why = "load balancer's backends were changed in the cloud"
		default:
			continue
		}
		if !c.state.forgetIf(k, st) {
			continue
		}
		drifted++
		logger.Info("Load balancer drifted from what was applied; ensuring it again", "service", k, "reason", why)
		c.queue.Add(key{Service: k})
	}
	c.metrics.drifted.Add(float64(drifted))
	return drifted
}

// appliedSets builds each applied node set's providerID set once per
// pass: the records of one version share their set, so a pass over 300
// load balancers of 5,000 nodes compares in linear time instead of sorting
// two lists of 5,000 per load balancer.
type appliedSets map[uint64]*providerIDSet

func (a appliedSets) of(applied nodeSet) *providerIDSet {
	if s, ok := a[applied.version]; ok {
		return s
	}
	s := newProviderIDSet(applied)
	a[applied.version] = s
	return s
}

// providerIDSet is the set of providerIDs of an applied node set (nodes
// without one carry no traffic), compared with what the cloud reports.
type providerIDSet struct {
	slot map[string]int
	// seen[slot] == round marks the IDs met in the current comparison.
	seen  []uint32
	round uint32
}

func newProviderIDSet(applied nodeSet) *providerIDSet {
	s := &providerIDSet{slot: make(map[string]int, len(applied.ids))}
	for _, id := range applied.ids {
		if _, dup := s.slot[id]; id != "" && !dup {
			s.slot[id] = len(s.slot)
		}
	}
	s.seen = make([]uint32, len(s.slot))
	return s
}

// equals compares, as sets, with the providerIDs the cloud reports.
func (s *providerIDSet) equals(cloudIDs []string) bool {
	s.round++
	distinct := 0
	for _, id := range cloudIDs {
		i, ok := s.slot[id]
		if !ok {
			return false
		}
		if s.seen[i] != s.round {
			s.seen[i] = s.round
			distinct++
		}
	}
	return distinct == len(s.slot)
}

// driftMemo remembers, per Service, the difference between applied nodes
// and cloud backends that a drift repair was last made for (pending), and
// the one that survived a repair (accepted: the provider's own choice).
// Each pass keeps only the entries it meets again, so a Service whose
// difference went away (or that is gone) is repaired afresh next time.
type driftMemo struct {
	mu   sync.Mutex
	memo driftRound
}

type driftRound struct {
	pending, accepted map[types.NamespacedName]uint64
}

// take hands the entries to one pass and starts afresh.
func (d *driftMemo) take() driftRound {
	d.mu.Lock()
	defer d.mu.Unlock()
	last := d.memo
	d.memo = driftRound{pending: map[types.NamespacedName]uint64{}, accepted: map[types.NamespacedName]uint64{}}
	return last
}

// holds tells whether fp was k's accepted difference or the one its last
// repair was made for.
func (r driftRound) holds(k types.NamespacedName, fp uint64) bool {
	a, accepted := r.accepted[k]
	p, pending := r.pending[k]
	return (accepted && a == fp) || (pending && p == fp)
}

func (d *driftMemo) repairing(k types.NamespacedName, fp uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.memo.pending[k] = fp
}

func (d *driftMemo) accept(k types.NamespacedName, fp uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.memo.accepted[k] = fp
}

// differenceOf fingerprints the difference between an applied node set
// and the cloud's backends: the providerIDs missing from the cloud and
// those it has beyond them. The nodes a provider leaves out stay the same
// difference when other nodes join or leave. It runs only for a load
// balancer that differs, so building maps is affordable.
func differenceOf(applied nodeSet, cloudIDs []string) uint64 {
	inCloud := make(map[string]bool, len(cloudIDs))
	for _, id := range cloudIDs {
		inCloud[id] = true
	}
	var missing, extra []string
	want := make(map[string]bool, len(applied.ids))
	for _, id := range applied.ids {
		if id != "" {
			want[id] = true
			if !inCloud[id] {
				missing = append(missing, id)
			}
		}
	}
	for id := range inCloud {
		if !want[id] {
			extra = append(extra, id)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	// A hash.Hash's Write never fails.
	h := fnv.New64a()
	for _, id := range slices.Compact(missing) {
		_, _ = h.Write(append([]byte(id), 0))
	}
	_, _ = h.Write([]byte{1})
	for _, id := range extra {
		_, _ = h.Write(append([]byte(id), 0))
	}
	return h.Sum64()
}
