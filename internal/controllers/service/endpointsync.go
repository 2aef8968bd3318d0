package service

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// syncEndpoints is sync for a Service whose load balancer targets its
// endpoints: a full ensure when the Service changed (or its load balancer
// targeted nodes), an endpoint update when only its endpoints did, once
// the endpoint pacer lets it, and otherwise only the status.
func (c *Controller) syncEndpoints(ctx context.Context, key types.NamespacedName, svc *corev1.Service, st *lbState) error {
	plan, err := planFamilies(svc, c.families)
	if err != nil {
		c.event(svc, corev1.EventTypeWarning, ReasonIPFamilyNotSupported, actionEnsure, "Error syncing load balancer: %v", err)
		return fmt.Errorf("sync service %s: %w", key, err)
	}
	var families []corev1.IPFamily
	if len(c.families) > 0 {
		families = plan.served
	}
	set, err := c.desiredEndpoints(ctx, svc, families)
	if err != nil {
		return fmt.Errorf("sync service %s: %w", key, err)
	}
	switch {
	case st == nil || st.uid != svc.UID || !lbConfigEqual(st.applied, svc) || st.targets != targetEndpoints:
		return c.ensureEndpoints(ctx, key, svc, plan, set, nil)
	case !endpointSetsEqual(st.endpoints, set):
		if d := c.epPacer.wait(key, c.now()); d > 0 {
			klog.FromContext(ctx).V(4).Info("Endpoints changing; the update waits for the burst to settle", "after", d)
			if q, ok := c.queue.Get(); ok {
				q.AddAfter(serviceKeyOf(key), d)
			}
			return nil
		}
		return c.ensureEndpoints(ctx, key, svc, plan, set, st)
	default:
		if err := c.patchStatus(ctx, svc, &st.status); err != nil {
			return fmt.Errorf("sync service %s: %w", key, err)
		}
		return nil
	}
}

func serviceKeyOf(k types.NamespacedName) key { return key{Service: k} }

// ensureEndpoints creates or updates the load balancer with
// EnsureLoadBalancerEndpoints. prev is the record of a load balancer
// whose Service is unchanged: only its endpoints changed, which is an
// update (counted, and reported as one) rather than an ensure.
func (c *Controller) ensureEndpoints(ctx context.Context, key types.NamespacedName, svc *corev1.Service, plan familyPlan, set cloud.EndpointSet, prev *lbState) error {
	logger := klog.FromContext(ctx)
	action, update := actionEnsure, prev != nil
	if update {
		action = actionUpdateEndpoints
		logger.V(2).Info("Updating load balancer endpoints", "endpoints", endpointCount(set))
	} else {
		if !c.state.setRetrying(key, false) {
			logger.V(2).Info("Ensuring load balancer with endpoint targets", "endpoints", endpointCount(set))
			c.event(svc, corev1.EventTypeNormal, ReasonEnsuringLoadBalancer, action, "Ensuring load balancer")
		}
		c.warnUnknownAnnotations(svc)
	}
	status, err := c.endpoints.EnsureLoadBalancerEndpoints(ctx, c.cfg.ClusterName, plan.forProvider(svc), set)
	result := kit.ResultOf(err)
	if update {
		c.metrics.endpointUpdates.WithLabelValues(result).Inc()
	}
	switch {
	case errors.Is(err, cloudprovider.ImplementedElsewhere):
		logger.V(4).Info("Load balancer is implemented elsewhere; nothing to do")
		return nil
	case err != nil:
		if result == kit.ResultRetry {
			c.state.setRetrying(key, true)
			return fmt.Errorf("sync service %s: ensure load balancer endpoints: %w", key, err)
		}
		reason := ReasonSyncLoadBalancerFailed
		if update {
			reason = ReasonUpdateLoadBalancerFailed
		}
		if errors.Is(err, cloud.ErrIPFamilyNotSupported) {
			reason = ReasonIPFamilyNotSupported
		}
		c.event(svc, corev1.EventTypeWarning, reason, action, "Error syncing load balancer endpoints: %v", err)
		return fmt.Errorf("sync service %s: ensure load balancer endpoints: %w", key, err)
	case status == nil:
		err := errors.New("the provider's EnsureLoadBalancerEndpoints returned no status")
		c.event(svc, corev1.EventTypeWarning, ReasonSyncLoadBalancerFailed, action, "Error syncing load balancer: %v", err)
		return fmt.Errorf("sync service %s: %w", key, err)
	}
	if update {
		c.event(svc, corev1.EventTypeNormal, ReasonUpdatedLoadBalancer, action, "Updated load balancer with new endpoints")
	} else {
		c.event(svc, corev1.EventTypeNormal, ReasonEnsuredLoadBalancer, action, "Ensured load balancer")
		c.warnIfIPIgnored(svc, status)
	}
	missing := missingFamilies(status, plan.served)
	if !update {
		c.warnFamiliesNotServed(svc, plan, missing)
	}
	c.state.set(key, &lbState{uid: svc.UID, applied: svc, status: *status.DeepCopy(),
		unserved: slices.Concat(plan.dropped, missing), targets: targetEndpoints, endpoints: set})
	if err := c.patchStatus(ctx, svc, status, c.conditionsAfterEnsure(key, svc)...); err != nil {
		return fmt.Errorf("sync service %s: %w", key, err)
	}
	return nil
}
