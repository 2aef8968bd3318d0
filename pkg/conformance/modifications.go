package conformance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// clockSkew is how far the cloud's clock may be from the caller's before
// a modification time counts as wrong: `stratus teardown` compares the
// times with its own clock over a window of minutes (10 by default), so a
// few minutes' difference still tells a live cluster from a dead one.
const clockSkew = 5 * time.Minute

// modificationChecks test cloud.ModificationLister, which `stratus
// teardown` reads to refuse the deletion of a live cluster's objects.
func modificationChecks() []check {
	return []check{
		{
			name: "EnsuredLoadBalancerIsReported",
			why: "`stratus teardown` refuses to delete a cluster whose load balancers changed within minutes, a sign its controller manager is alive: " +
				"a load balancer ListModifications omits or dates wrong lets it delete the load balancers of a live cluster (whose Services then advertise dead addresses until they are made again), " +
				"and one it reports in another cluster makes that cluster's teardown refuse for nothing.",
			needs: (*suite).needModificationsOfLBs,
			test:  testEnsuredLBReported,
			cleanup: func(ctx context.Context, s *suite) error {
				_, err := retrying(ctx, s.deleteLB(s.cfg.Service))
				return err
			},
		},
		{
			name: "CreatedRouteIsReported",
			why: "`stratus teardown` refuses to delete a cluster whose routes changed within minutes, a sign its route controller is alive: " +
				"a route ListModifications omits or dates wrong lets it delete the routes of a live cluster, cutting its Pods off until they are made again.",
			needs:   (*suite).needModificationsOfRoutes,
			test:    testCreatedRouteReported,
			cleanup: removeRoutes,
		},
	}
}

func (s *suite) modifications() cloud.ModificationLister {
	l, _ := s.cfg.Provider.(cloud.ModificationLister)
	return l
}

func (s *suite) needModificationsOfLBs() string {
	if s.modifications() == nil {
		return "the provider does not implement cloud.ModificationLister"
	}
	return s.needLB()
}

func (s *suite) needModificationsOfRoutes() string {
	if s.modifications() == nil {
		return "the provider does not implement cloud.ModificationLister"
	}
	return s.needRoutes()
}

func testEnsuredLBReported(ctx context.Context, s *suite) error {
	svc := s.cfg.Service
	before := time.Now()
	if _, err := retrying(ctx, s.ensure(svc)); err != nil {
		return fmt.Errorf("EnsureLoadBalancer: %w", err)
	}
	after := time.Now()
	name, err := s.cloudNameOf(ctx, svc)
	if err != nil {
		return err
	}
	if err := s.reported(ctx, s.cfg.ClusterName, cloud.KindLoadBalancer, name, before, after); err != nil {
		return err
	}
	other, err := s.listModifications(ctx, s.otherCluster())
	if err != nil {
		return err
	}
	for _, m := range other {
		if m.Kind == cloud.KindLoadBalancer && m.Name == name {
			return fmt.Errorf("ListModifications(%q) reports load balancer %s, which cluster %q made: that cluster's teardown would refuse because of it",
				s.otherCluster(), name, s.cfg.ClusterName)
		}
	}
	return nil
}

func testCreatedRouteReported(ctx context.Context, s *suite) error {
	r := s.route()
	before := time.Now()
	if err := s.createRoute(ctx, r); err != nil {
		return fmt.Errorf("CreateRoute(%s → %s): %w", r.DestinationCIDR, r.TargetNode, err)
	}
	after := time.Now()
	listed, err := s.findRoutes(ctx, r)
	if err != nil {
		return err
	}
	if len(listed) == 0 {
		return fmt.Errorf("the created route %s → %s is not listed", r.DestinationCIDR, r.TargetNode)
	}
	return s.reported(ctx, s.cfg.ClusterName, cloud.KindRoute, listed[0].Name, before, after)
}

// cloudNameOf is the name the cloud lists the Service's load balancer
// under: ListLoadBalancers' when the provider has it, else
// GetLoadBalancerName.
func (s *suite) cloudNameOf(ctx context.Context, svc *corev1.Service) (string, error) {
	if s.lbLister == nil {
		return s.lb.GetLoadBalancerName(ctx, s.cfg.ClusterName, svc), nil
	}
	lbs, err := retrying(ctx, func(ctx context.Context) ([]cloud.LoadBalancer, error) {
		return s.lbLister.ListLoadBalancers(ctx, s.cfg.ClusterName)
	})
	if err != nil {
		return "", fmt.Errorf("ListLoadBalancers: %w", err)
	}
	for _, lb := range lbs {
		if lb.ServiceUID == svc.UID {
			return lb.Name, nil
		}
	}
	return "", fmt.Errorf("ListLoadBalancers shows no load balancer for Service %s/%s (UID %s) after EnsureLoadBalancer", svc.Namespace, svc.Name, svc.UID)
}

// reported checks that the cluster's modifications hold the object, dated
// between before and after (within clockSkew).
func (s *suite) reported(ctx context.Context, cluster, kind, name string, before, after time.Time) error {
	mods, err := s.listModifications(ctx, cluster)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if m.Kind != kind || m.Name != name {
			continue
		}
		if m.At.Before(before.Add(-clockSkew)) || m.At.After(after.Add(clockSkew)) {
			return fmt.Errorf("ListModifications(%q) dates %s %s at %s; it was changed between %s and %s (by the caller's clock, give or take %v)",
				cluster, kind, name, m.At.Format(time.RFC3339), before.Format(time.RFC3339), after.Format(time.RFC3339), clockSkew)
		}
		return nil
	}
	return fmt.Errorf("ListModifications(%q) does not report %s %s, just changed", cluster, kind, name)
}

func (s *suite) listModifications(ctx context.Context, cluster string) ([]cloud.Modification, error) {
	mods, err := retrying(ctx, func(ctx context.Context) ([]cloud.Modification, error) {
		return s.modifications().ListModifications(ctx, cluster)
	})
	if err != nil {
		return nil, fmt.Errorf("ListModifications(%q): %w", cluster, err)
	}
	return mods, nil
}
