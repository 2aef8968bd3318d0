package service

import (
	"context"
	"slices"

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
	for k, st := range before {
		lb, exists := byUID[st.uid]
		why := ""
		switch {
		case !exists:
			why = "load balancer no longer exists in the cloud"
		case lb.Backends != nil && !sameBackends(st.nodes, lb.Backends):
			why = "load balancer's backends were changed in the cloud"
		default:
			continue
		}
		if !c.state.forgetIf(k, st) {
			continue
		}
		drifted++
		logger.Info("Load balancer drifted from what was applied; ensuring it again", "service", k, "reason", why)
		if q := c.queue.Load(); q != nil {
			(*q).Add(key{Service: k})
		}
	}
	c.metrics.drifted.Add(float64(drifted))
	return drifted
}

// sameBackends compares the providerIDs applied (nodes without one carry
// no traffic) with those the cloud reports, as sets.
func sameBackends(applied nodeSet, cloudIDs []string) bool {
	want := make([]string, 0, len(applied.ids))
	for _, id := range applied.ids {
		if id != "" {
			want = append(want, id)
		}
	}
	got := slices.Clone(cloudIDs)
	slices.Sort(want)
	slices.Sort(got)
	return slices.Equal(slices.Compact(want), slices.Compact(got))
}
