package service

import (
	"context"

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
	for k, st := range before {
		lb, exists := byUID[st.uid]
		why := ""
		switch {
		case !exists:
			why = "load balancer no longer exists in the cloud"
		case lb.Backends != nil && !sets.of(st.nodes).equals(lb.Backends):
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
