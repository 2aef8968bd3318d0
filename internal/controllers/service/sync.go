package service

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// maxNodeNamesInEvents bounds the node list in events and logs.
const maxNodeNamesInEvents = 20

// sync brings one Service's load balancer to what the Service asks for.
// It returns an error carrying a RetryError when the cloud asked to come
// back later; any other error is retried with backoff.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	// Before the node set is read below: a node pass from now on queues
	// this Service again.
	end := c.state.begin(key)
	defer end()
	svc := &corev1.Service{}
	err := c.client.Get(ctx, key, svc)
	if apierrors.IsNotFound(err) {
		// The finalizer guarantees that a Service with a load balancer is
		// seen with a deletion timestamp first; nothing is left to do.
		c.state.forget(key)
		c.epPacer.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync service %s: get: %w", key, err)
	}
	class := c.cfg.LoadBalancerClass
	switch {
	case needsCleanup(svc, class):
		return c.cleanup(ctx, key, svc)
	case svc.DeletionTimestamp != nil || !wantsLoadBalancer(svc, class):
		c.state.forget(key)
		c.epPacer.forget(key)
		return nil
	}
	// The finalizer goes on before the cloud is touched, so the Service
	// cannot disappear while a load balancer exists for it.
	if svc, err = c.addFinalizer(ctx, svc); err != nil {
		return fmt.Errorf("sync service %s: add finalizer: %w", key, err)
	}
	c.seedNodes(ctx)
	st := c.state.get(key)
	choice, err := c.chooseTargets(svc)
	if err != nil {
		// Refused before any cloud call: the Service has no node ports to
		// target and the provider cannot target its endpoints.
		c.event(svc, corev1.EventTypeWarning, ReasonEndpointTargetsNotSupported, actionEnsure, "Error syncing load balancer: %v", err)
		return fmt.Errorf("sync service %s: %w", key, err)
	}
	if choice.targets == targetEndpoints {
		return c.syncEndpoints(ctx, key, svc, st)
	}
	c.epPacer.forget(key)
	nodes := c.nodes.snapshot()
	switch {
	case st == nil || st.uid != svc.UID || !lbConfigEqual(st.applied, svc) || st.targets != targetNodes || st.fallback != choice.fallback:
		return c.keepHostsCurrent(ctx, key, svc, st, nodes, c.ensure(ctx, key, svc, nodes, choice.fallback))
	case !sameNodes(st.nodes, nodes):
		if c.nodePacer.holding(c.now()) {
			// A burst of node changes is under way: its pass queues this
			// Service again once the node set has settled, so the load
			// balancer is updated once, not once per node.
			klog.FromContext(ctx).V(4).Info("Node set changing; the update waits for the burst's node pass")
			return nil
		}
		gone, err := c.updateHosts(ctx, key, svc, st, nodes)
		if gone {
			// A load balancer removed behind the controller's back is
			// recreated by a full ensure, at once rather than after a
			// backoff.
			return c.ensure(ctx, key, svc, nodes, choice.fallback)
		}
		return err
	default:
		// Nothing changed for the cloud; status may have been reset by
		// someone else.
		if err := c.patchStatus(ctx, svc, &st.status); err != nil {
			return fmt.Errorf("sync service %s: %w", key, err)
		}
		return nil
	}
}

// seedNodes makes sure, once per controller, that the node set of the
// first syncs is the cache's whole view: the workers start once the
// Node handler has seen every existing Node, and a sync that ran with
// fewer would hand the cloud a load balancer without its nodes (a
// takeover's first ensure would take working backends away). Should the
// handler still lag the cache, the missing Nodes are added from it and
// the gap is logged.
func (c *Controller) seedNodes(ctx context.Context) {
	c.seedOnce.Do(func() {
		var list corev1.NodeList
		if err := c.client.List(ctx, &list); err != nil {
			klog.FromContext(ctx).Error(err, "Listing Nodes from the cache for the first sync failed; the node set is the Node handler's")
			return
		}
		if added := c.nodes.seed(list.Items); added > 0 {
			klog.FromContext(ctx).Info("The Node handler had not seen every cached Node at the first sync; added them", "added", added, "cached", len(list.Items))
		}
	})
}

// ensure creates or updates the load balancer with EnsureLoadBalancer.
// fallback, when set, says why a Service that needs or asks for endpoint
// targets gets node targets.
func (c *Controller) ensure(ctx context.Context, key types.NamespacedName, svc *corev1.Service, nodes nodeSet, fallback string) error {
	logger := klog.FromContext(ctx)
	if !c.state.setRetrying(key, false) {
		logger.V(2).Info("Ensuring load balancer", "nodes", len(nodes.nodes))
		c.event(svc, corev1.EventTypeNormal, ReasonEnsuringLoadBalancer, actionEnsure, "Ensuring load balancer")
	}
	c.warnUnknownAnnotations(svc)
	plan, err := planFamilies(svc, c.families)
	if err != nil {
		// Refused before any cloud call: no load balancer is made or
		// changed for a family set the cloud cannot serve whole.
		c.event(svc, corev1.EventTypeWarning, ReasonIPFamilyNotSupported, actionEnsure, "Error syncing load balancer: %v", err)
		return fmt.Errorf("sync service %s: %w", key, err)
	}
	if len(nodes.nodes) == 0 {
		c.event(svc, corev1.EventTypeWarning, ReasonUnAvailableLoadBalancer, actionEnsure, "There are no available nodes for LoadBalancer")
	}
	if fallback != "" {
		c.event(svc, corev1.EventTypeWarning, ReasonEndpointTargetsNotSupported, actionEnsure,
			"The load balancer targets nodes, not the Service's endpoints: %s", fallback)
	}
	status, err := c.lb.EnsureLoadBalancer(ctx, c.cfg.ClusterName, plan.forProvider(svc), nodes.nodes)
	switch {
	case errors.Is(err, cloudprovider.ImplementedElsewhere):
		logger.V(4).Info("Load balancer is implemented elsewhere; nothing to do")
		return nil
	case err != nil:
		if kit.ResultOf(err) == kit.ResultRetry {
			// Expected while the cloud provisions: no warning event.
			c.state.setRetrying(key, true)
			return fmt.Errorf("sync service %s: ensure load balancer: %w", key, err)
		}
		reason := ReasonSyncLoadBalancerFailed
		if errors.Is(err, cloud.ErrIPFamilyNotSupported) {
			reason = ReasonIPFamilyNotSupported
		}
		c.event(svc, corev1.EventTypeWarning, reason, actionEnsure, "Error syncing load balancer: %v", err)
		return fmt.Errorf("sync service %s: ensure load balancer: %w", key, err)
	case status == nil:
		err := errors.New("the provider's EnsureLoadBalancer returned no status")
		c.event(svc, corev1.EventTypeWarning, ReasonSyncLoadBalancerFailed, actionEnsure, "Error syncing load balancer: %v", err)
		return fmt.Errorf("sync service %s: %w", key, err)
	}
	c.event(svc, corev1.EventTypeNormal, ReasonEnsuredLoadBalancer, actionEnsure, "Ensured load balancer")
	c.warnIfIPIgnored(svc, status)
	missing := missingFamilies(status, plan.served)
	c.warnFamiliesNotServed(svc, plan, missing)
	// Recorded before the status write, so that a failed write is retried
	// without another cloud call.
	c.state.set(key, &lbState{uid: svc.UID, applied: svc, status: *status.DeepCopy(), nodes: nodes,
		unserved: slices.Concat(plan.dropped, missing), fallback: fallback})
	if err := c.patchStatus(ctx, svc, status, c.conditionsAfterEnsure(key, svc)...); err != nil {
		return fmt.Errorf("sync service %s: %w", key, err)
	}
	return nil
}

// warnUnknownAnnotations says so on the Service when it carries
// annotations under the provider's prefix that the provider does not read:
// a misspelt annotation would otherwise be ignored in silence.
func (c *Controller) warnUnknownAnnotations(svc *corev1.Service) {
	if c.annots == nil {
		return
	}
	if unknown, known := c.annots.UnknownAnnotations(svc); len(unknown) > 0 {
		c.event(svc, corev1.EventTypeWarning, ReasonUnknownAnnotation, actionEnsure,
			"annotations %v are not read by the cloud provider and have no effect (it reads %v)", unknown, known)
	}
}

// warnIfIPIgnored says so on the Service when it asked for
// spec.loadBalancerIP and the provider, which may not support the field
// (upstream deprecated it), published other addresses: the request would
// otherwise be ignored in silence.
func (c *Controller) warnIfIPIgnored(svc *corev1.Service, status *corev1.LoadBalancerStatus) {
	want := svc.Spec.LoadBalancerIP
	if want == "" || len(status.Ingress) == 0 {
		return
	}
	got := make([]string, 0, len(status.Ingress))
	for _, in := range status.Ingress {
		if in.IP == want {
			return
		}
		got = append(got, in.IP+in.Hostname)
	}
	c.event(svc, corev1.EventTypeWarning, ReasonLoadBalancerIPIgnored, actionEnsure,
		"spec.loadBalancerIP %s was not honoured by the cloud provider, which assigned %v", want, got)
}

// updateHosts tells the cloud about a new node set, leaving the rest of
// the load balancer alone (upstream's UpdateLoadBalancer contract). It
// reports gone, with its record forgotten, when the update failed because
// the load balancer no longer exists.
func (c *Controller) updateHosts(ctx context.Context, key types.NamespacedName, svc *corev1.Service, st *lbState, nodes nodeSet) (gone bool, err error) {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Updating load balancer hosts", "nodes", len(nodes.nodes), "names", nodeNames(nodes.nodes, maxNodeNamesInEvents))
	// The provider is handed the Service as its ensure was (families.go);
	// the plan was accepted then, so it is again.
	plan, _ := planFamilies(svc, c.families)
	err = c.lb.UpdateLoadBalancer(ctx, c.cfg.ClusterName, plan.forProvider(svc), nodes.nodes)
	if err == nil || errors.Is(err, cloudprovider.ImplementedElsewhere) {
		c.metrics.updates.WithLabelValues(kit.ResultSuccess).Inc()
		c.state.set(key, &lbState{uid: st.uid, applied: st.applied, status: st.status, nodes: nodes, unserved: st.unserved, fallback: st.fallback})
		if !nodes.since.IsZero() {
			c.metrics.nodeLatency.Observe(c.now().Sub(nodes.since).Seconds())
		}
		if len(nodes.nodes) == 0 {
			c.event(svc, corev1.EventTypeWarning, ReasonUnAvailableLoadBalancer, actionUpdate, "There are no available nodes for LoadBalancer")
		} else {
			c.event(svc, corev1.EventTypeNormal, ReasonUpdatedLoadBalancer, actionUpdate, "Updated load balancer with new hosts")
		}
		return false, nil
	}
	result := kit.ResultOf(err)
	c.metrics.updates.WithLabelValues(result).Inc()
	if result == kit.ResultRetry {
		return false, fmt.Errorf("sync service %s: update load balancer: %w", key, err)
	}
	if _, exists, gerr := c.lb.GetLoadBalancer(ctx, c.cfg.ClusterName, svc); gerr == nil && !exists {
		logger.Info("Load balancer is gone; ensuring it again")
		c.state.forget(key)
		return true, nil
	}
	c.event(svc, corev1.EventTypeWarning, ReasonUpdateLoadBalancerFailed, actionUpdate,
		"Error updating load balancer with new hosts %v [node names limited, total number of nodes: %d], error: %v",
		nodeNames(nodes.nodes, maxNodeNamesInEvents), len(nodes.nodes), err)
	return false, fmt.Errorf("sync service %s: update load balancer: %w", key, err)
}

// cleanup deletes the load balancer of a Service that no longer wants one,
// clears its status and only then removes the finalizer.
func (c *Controller) cleanup(ctx context.Context, key types.NamespacedName, svc *corev1.Service) error {
	klog.FromContext(ctx).V(2).Info("Deleting load balancer", "deleting", svc.DeletionTimestamp != nil, "type", svc.Spec.Type)
	c.event(svc, corev1.EventTypeNormal, ReasonDeletingLoadBalancer, actionDelete, "Deleting load balancer")
	err := c.lb.EnsureLoadBalancerDeleted(ctx, c.cfg.ClusterName, svc)
	if err != nil && !errors.Is(err, cloudprovider.ImplementedElsewhere) {
		if kit.ResultOf(err) == kit.ResultError {
			c.event(svc, corev1.EventTypeWarning, ReasonDeleteLoadBalancerFailed, actionDelete, "Error deleting load balancer: %v", err)
		}
		return fmt.Errorf("sync service %s: delete load balancer: %w", key, err)
	}
	c.state.forget(key)
	c.epPacer.forget(key)
	if svc.DeletionTimestamp == nil {
		if err := c.patchStatus(ctx, svc, &corev1.LoadBalancerStatus{}); err != nil {
			return fmt.Errorf("sync service %s: %w", key, err)
		}
	}
	if err := c.removeFinalizer(ctx, svc); err != nil {
		return fmt.Errorf("sync service %s: remove finalizer: %w", key, err)
	}
	c.event(svc, corev1.EventTypeNormal, ReasonDeletedLoadBalancer, actionDelete, "Deleted load balancer")
	return nil
}

func (c *Controller) event(svc *corev1.Service, eventType, reason, action, note string, args ...any) {
	c.events.Eventf(svc, nil, eventType, reason, action, note, args...)
}
