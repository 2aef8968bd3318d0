package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// orphanTracker remembers since when each orphan has been seen, so that
// one is deleted only after staying orphaned for the whole grace period.
type orphanTracker struct {
	mu    sync.Mutex
	since map[string]time.Time
}

func newOrphanTracker() *orphanTracker { return &orphanTracker{since: map[string]time.Time{}} }

// collectOrphans lists the cluster's load balancers once, reports those
// whose Service no longer wants them and, when enabled, deletes those
// orphaned for longer than the grace period. A failed list changes
// nothing: only a complete answer can prove that a Service's load
// balancer is not among the live ones.
//
// The same list repairs drift: see repairDrift.
func (c *Controller) collectOrphans(ctx context.Context) error {
	applied := c.state.all()
	lbs, err := c.lister.ListLoadBalancers(ctx, c.cfg.ClusterName)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", c.cfg.ClusterName, err)
	}
	c.repairDrift(ctx, applied, lbs)
	logger := klog.FromContext(ctx)
	now := c.now()
	seen := map[string]time.Time{}
	for _, lb := range lbs {
		orphan, why, err := c.isOrphan(ctx, lb, c.client)
		if err != nil {
			logger.Error(err, "Cannot tell whether load balancer is orphaned; leaving it", "loadBalancer", lb.Name)
			continue
		}
		if !orphan {
			continue
		}
		since := c.orphans.firstSeen(lb.Name, now)
		seen[lb.Name] = since
		logger.Info("Orphaned load balancer", "loadBalancer", lb.Name,
			"service", klog.KRef(lb.ServiceNamespace, lb.ServiceName), "serviceUID", lb.ServiceUID,
			"reason", why, "orphanedFor", now.Sub(since).Round(time.Second), "delete", c.cfg.DeleteOrphans)
		if c.cfg.DeleteOrphans && now.Sub(since) >= c.cfg.OrphanGrace {
			if c.deleteOrphan(ctx, lb) {
				delete(seen, lb.Name)
			}
		}
	}
	c.orphans.replace(seen)
	c.metrics.orphans.Set(float64(len(seen)))
	return nil
}

// isOrphan decides from r whether lb's Service no longer wants it.
func (c *Controller) isOrphan(ctx context.Context, lb cloud.LoadBalancer, r client.Reader) (bool, string, error) {
	if lb.ServiceName == "" || lb.ServiceNamespace == "" || lb.ServiceUID == "" {
		// Not identifiable as a Service's: not this controller's to judge.
		return false, "", nil
	}
	svc := &corev1.Service{}
	err := r.Get(ctx, types.NamespacedName{Namespace: lb.ServiceNamespace, Name: lb.ServiceName}, svc)
	switch {
	case apierrors.IsNotFound(err):
		return true, "service not found", nil
	case err != nil:
		return false, "", err
	case svc.UID != lb.ServiceUID:
		return true, "service was recreated (different UID)", nil
	case wantsLoadBalancer(svc, c.cfg.LoadBalancerClass) && svc.DeletionTimestamp == nil:
		return false, "", nil
	case servicehelper.HasLBFinalizer(svc):
		// Cleanup is under way in the Service's own sync.
		return false, "", nil
	default:
		return true, "service does not want a load balancer", nil
	}
}

// deleteOrphan confirms against the API server (not the cache, which may
// lag) that the Service still does not want the load balancer, then
// deletes it through the standard API with a Service rebuilt from the
// cloud's tags: providers name load balancers after the Service's UID.
func (c *Controller) deleteOrphan(ctx context.Context, lb cloud.LoadBalancer) bool {
	logger := klog.FromContext(ctx).WithValues("loadBalancer", lb.Name)
	orphan, _, err := c.isOrphan(ctx, lb, c.apiReader)
	if err != nil || !orphan {
		logger.Info("Not deleting load balancer: its Service could not be confirmed gone", "err", err)
		return false
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Namespace: lb.ServiceNamespace, Name: lb.ServiceName, UID: lb.ServiceUID,
	}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	if err := c.lb.EnsureLoadBalancerDeleted(ctx, c.cfg.ClusterName, svc); err != nil {
		c.metrics.orphanDeletes.WithLabelValues(kit.ResultError).Inc()
		logger.Error(err, "Deleting orphaned load balancer failed")
		return false
	}
	c.metrics.orphanDeletes.WithLabelValues(kit.ResultSuccess).Inc()
	logger.Info("Deleted orphaned load balancer", "service", klog.KRef(lb.ServiceNamespace, lb.ServiceName), "serviceUID", lb.ServiceUID)
	return true
}

func (t *orphanTracker) firstSeen(name string, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.since[name]; ok {
		return s
	}
	return now
}

// replace keeps only the orphans seen in the last complete pass: one that
// got its Service back starts its grace period afresh if orphaned again.
func (t *orphanTracker) replace(seen map[string]time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.since = seen
}
