package conformance

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ownershipChecks test that a load balancer belongs to the cluster that
// made it: a second cluster in the same cloud account whose Service has
// the same namespace and name must neither see nor delete it. Two
// clusters per account are common (staging beside production, a
// blue-green upgrade), and a provider that finds load balancers by a name
// both clusters derive alike lets one cluster's orphan collector,
// teardown or Service deletion remove the other's load balancer.
func ownershipChecks() []check {
	return []check{
		{
			name: "ScopedToCluster",
			why: "the service controller, its orphan collector and `stratus teardown` look load balancers up by cluster name: a load balancer another cluster sees as its own " +
				"(same Service namespace and name, another UID, another --cluster-name) is one that cluster deletes when its Service goes, or when it is torn down.",
			needs: (*suite).needLB,
			test: func(ctx context.Context, s *suite) error {
				return s.testScoped(ctx, s.otherService(s.cfg.Service.Name, string(s.cfg.Service.UID)+"-b"))
			},
			cleanup: func(ctx context.Context, s *suite) error {
				return s.cleanScoped(ctx, s.otherService(s.cfg.Service.Name, string(s.cfg.Service.UID)+"-b"))
			},
		},
		{
			name: "ScopedToClusterWithTheSameUID",
			why: "a cluster restored from another's backup has the same Service UIDs: a provider whose load balancer names come from the UID alone, " +
				"in a namespace shared by the account, lets the restored cluster take over, and delete, the original's load balancers.",
			recommended: true,
			needs:       (*suite).needLB,
			test: func(ctx context.Context, s *suite) error {
				return s.testScoped(ctx, s.cfg.Service.DeepCopy())
			},
			cleanup: func(ctx context.Context, s *suite) error { return s.cleanScoped(ctx, s.cfg.Service.DeepCopy()) },
		},
	}
}

// otherCluster is the second cluster's name.
func (s *suite) otherCluster() string { return s.cfg.ClusterName + "-other" }

// testScoped makes the Service's load balancer in the cluster under test,
// then acts as the other cluster with twin (same namespace and name): the
// other cluster must not find it, not list it, and not delete it, neither
// while it has no load balancer of its own nor after it made and deleted
// one. Whether the load balancer survived is read from the provider's list
// when it has one, else from GetLoadBalancer when that reports what
// EnsureLoadBalancer made (upstream's fake, for one, always answers its
// configured Exists: there the deletions cannot be observed, and only what
// the other cluster finds and lists is checked).
func (s *suite) testScoped(ctx context.Context, twin *corev1.Service) error {
	mine := s.cfg.Service
	if _, err := retrying(ctx, s.ensure(mine)); err != nil {
		return fmt.Errorf("EnsureLoadBalancer: %w", err)
	}
	_, observable, err := s.lb.GetLoadBalancer(ctx, s.cfg.ClusterName, mine)
	if err != nil {
		return fmt.Errorf("GetLoadBalancer in cluster %q: %w", s.cfg.ClusterName, err)
	}
	observable = observable || s.lbLister != nil
	other := s.otherCluster()
	_, exists, err := s.lb.GetLoadBalancer(ctx, other, twin)
	switch {
	case err != nil:
		return fmt.Errorf("GetLoadBalancer in cluster %q: %w", other, err)
	case exists:
		return fmt.Errorf("GetLoadBalancer in cluster %q finds the load balancer of Service %s/%s that cluster %q made", other, mine.Namespace, mine.Name, s.cfg.ClusterName)
	}
	if err := s.notListedIn(ctx, other, mine.UID); err != nil {
		return err
	}
	// An error here is DeletingMissingSucceeds' to report; what matters
	// here is that the load balancer survives the call.
	_, _ = retrying(ctx, s.deleteIn(other, twin))
	if err := s.stillMine(ctx, observable, "after cluster "+other+" deleted its Service's load balancer, which it never had"); err != nil {
		return err
	}
	if _, err := retrying(ctx, s.ensureIn(other, twin)); err != nil {
		return fmt.Errorf("EnsureLoadBalancer in cluster %q: %w", other, err)
	}
	if _, err := retrying(ctx, s.deleteIn(other, twin)); err != nil {
		return fmt.Errorf("EnsureLoadBalancerDeleted in cluster %q: %w", other, err)
	}
	return s.stillMine(ctx, observable, "after cluster "+other+" made and deleted its own load balancer for a Service of the same name")
}

// stillMine checks the cluster under test still has exactly its load
// balancer, when the provider lets that be observed.
func (s *suite) stillMine(ctx context.Context, observable bool, when string) error {
	if !observable {
		return nil
	}
	if s.lbLister != nil {
		if err := s.exactlyOneListed(ctx, s.cfg.Service); err != nil {
			return fmt.Errorf("%s: %w", when, err)
		}
		return nil
	}
	_, exists, err := s.lb.GetLoadBalancer(ctx, s.cfg.ClusterName, s.cfg.Service)
	switch {
	case err != nil:
		return fmt.Errorf("%s, GetLoadBalancer in cluster %q: %w", when, s.cfg.ClusterName, err)
	case !exists:
		return fmt.Errorf("%s, cluster %q's load balancer is gone: another cluster deleted it", when, s.cfg.ClusterName)
	}
	return nil
}

// notListedIn checks, when the provider can list, that cluster's list
// holds no load balancer of the Service with uid.
func (s *suite) notListedIn(ctx context.Context, cluster string, uid types.UID) error {
	if s.lbLister == nil {
		return nil
	}
	lbs, err := s.lbLister.ListLoadBalancers(ctx, cluster)
	if err != nil {
		return fmt.Errorf("ListLoadBalancers(%q): %w", cluster, err)
	}
	for _, lb := range lbs {
		if lb.ServiceUID == uid {
			return fmt.Errorf("ListLoadBalancers(%q) lists %s, the load balancer cluster %q made: its orphan collector would delete it", cluster, lb.Name, s.cfg.ClusterName)
		}
	}
	return nil
}

func (s *suite) cleanScoped(ctx context.Context, twin *corev1.Service) error {
	_, errOther := retrying(ctx, s.deleteIn(s.otherCluster(), twin))
	_, errMine := retrying(ctx, s.deleteLB(s.cfg.Service))
	return errors.Join(errOther, errMine)
}

func (s *suite) ensureIn(cluster string, svc *corev1.Service) func(context.Context) (*corev1.LoadBalancerStatus, error) {
	return func(ctx context.Context) (*corev1.LoadBalancerStatus, error) {
		return s.lb.EnsureLoadBalancer(ctx, cluster, svc.DeepCopy(), s.cfg.Instances)
	}
}

func (s *suite) deleteIn(cluster string, svc *corev1.Service) func(context.Context) (struct{}, error) {
	return func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.lb.EnsureLoadBalancerDeleted(ctx, cluster, svc.DeepCopy())
	}
}
