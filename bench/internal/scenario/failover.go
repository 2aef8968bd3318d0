package scenario

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/results"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// failover: two replicas; Services are created one every 100 ms and the
// leader is SIGKILLed after a third of them. Measured: time from the kill
// until the standby leads (the Lease's acquireTime, written by the new
// leader's elector), from then until its first action (the first load
// balancer it creates, by the cloud's record), from the kill until every
// Service has an ingress, and load balancers beyond one per Service (must
// be 0). All clocks are this machine's.
func (e *Env) failover(ctx context.Context, c harness.Contestant, cloud, dir string) (map[string]float64, map[string]int64, error) {
	cl, token, err := e.startCluster(ctx, dir, cloud, 0)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Stop()
	nodes := names(harness.NodeName, 1, failoverNodes(e.S))
	if _, err := cl.CreateInstances(ctx, nodes); err != nil {
		return nil, nil, err
	}
	leader, err := e.startLeader(ctx, cl, c)
	if err != nil {
		return nil, nil, err
	}
	defer leader.Stop(10 * time.Second)
	holderA, err := cl.LeaseHolder(ctx)
	if err != nil {
		return nil, nil, err
	}
	standby, err := cl.StartCCM(c, "b", e.ccmOptions())
	if err != nil {
		return nil, nil, err
	}
	defer standby.Stop(30 * time.Second)
	if _, err := e.initNodes(ctx, cl, nodes, nil, leader, standby); err != nil {
		return nil, nil, err
	}
	m, err := startMeter(ctx, cl, standby, token)
	if err != nil {
		return nil, nil, err
	}
	svcs := names(harness.ServiceName, 1, e.S.FailoverSvcs)
	tr := cl.TrackServices()
	defer tr.Stop()
	killAt := len(svcs) / 3
	var tKill time.Time
	figs := map[string]float64{}
	for i, s := range svcs {
		if i == killAt {
			if err := replicasRSS(figs, leader, standby); err != nil {
				return nil, nil, err
			}
			leader.Kill()
			tKill = time.Now()
		}
		if err := cl.CreateService(ctx, s); err != nil {
			return nil, nil, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := harness.Poll(ctx, 100*time.Millisecond, 2*time.Minute, "the standby to take over", func(ctx context.Context) (bool, error) {
		h, err := cl.LeaseHolder(ctx)
		return err == nil && h != "" && h != holderA, nil
	}); err != nil {
		return nil, nil, err
	}
	acquired, err := leaseAcquired(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	figs[results.FigTakeover] = acquired.Sub(tKill).Seconds()
	last, err := tr.Wait(ctx, svcs, e.PhaseTimeout, alive(standby))
	if err != nil {
		return nil, nil, fmt.Errorf("services published after failover: %w", err)
	}
	figs[results.FigFailover] = last.Sub(tKill).Seconds()
	lbs, err := cl.Cloud.ListAllLoadBalancers(ctx, lcList())
	if err != nil {
		return nil, nil, err
	}
	figs[results.FigDuplicates] = float64(duplicates(lbs))
	if first, ok := firstCreatedAfter(lbs, acquired); ok {
		figs[results.FigFirstAction] = first.Sub(acquired).Seconds()
	}
	ops, err := m.finish(ctx, figs)
	return figs, ops, err
}

// failoverNodes is the node count of the failover cluster: its own
// setting, so that a standby's memory can be measured at a scale where the
// caches dominate it, else the load-balancer scenario's few nodes.
func failoverNodes(s results.Settings) int {
	if s.FailoverNodes > 0 {
		return s.FailoverNodes
	}
	return s.LBNodes
}

// replicasRSS records the leader's and the standby's resident sets: what
// a warm standby costs next to the replica doing the work.
func replicasRSS(figs map[string]float64, leader, standby *harness.CCM) error {
	l, err := harness.RSSMiB(leader.Pid())
	if err != nil {
		return err
	}
	s, err := harness.RSSMiB(standby.Pid())
	if err != nil {
		return err
	}
	figs[results.FigLeaderRSS], figs[results.FigStandbyRSS] = l, s
	return nil
}

// duplicates counts load balancers beyond the first for each Service,
// recognized by the Service UID tag the provider writes.
func duplicates(lbs []api.LoadBalancer) int {
	per := map[string]int{}
	extra := 0
	for _, lb := range lbs {
		uid := lb.Tags[api.TagServiceUID]
		if uid == "" {
			uid = lb.Name
		}
		per[uid]++
		if per[uid] > 1 {
			extra++
		}
	}
	return extra
}

// leaseAcquired reads when the current holder acquired the Lease.
func leaseAcquired(ctx context.Context, cl *harness.Cluster) (time.Time, error) {
	l, err := cl.Kube.CoordinationV1().Leases(harness.LeaseNamespace).Get(ctx, harness.LeaseName, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("failover: read the lease: %w", err)
	}
	if l.Spec.AcquireTime == nil {
		return time.Time{}, fmt.Errorf("failover: the lease %s/%s has no acquireTime", harness.LeaseNamespace, harness.LeaseName)
	}
	return l.Spec.AcquireTime.Time, nil
}

// firstCreatedAfter is the creation time of the first load balancer made
// after t: the new leader's first action in this scenario, where Services
// created while nobody led are waiting for one.
func firstCreatedAfter(lbs []api.LoadBalancer, t time.Time) (time.Time, bool) {
	var first time.Time
	for _, lb := range lbs {
		if lb.CreatedAt.After(t) && (first.IsZero() || lb.CreatedAt.Before(first)) {
			first = lb.CreatedAt
		}
	}
	return first, !first.IsZero()
}
