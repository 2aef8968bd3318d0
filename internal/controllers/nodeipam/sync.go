package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// sync brings one Node's pod CIDRs in line: learn what it carries, give it
// CIDRs when it has none, release them when it is gone.
func (c *Controller) sync(ctx context.Context, name string) error {
	log := klog.FromContext(ctx)
	if err := c.learnExisting(ctx); err != nil {
		return err
	}
	node := &corev1.Node{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			if c.alloc.release(name) {
				log.V(2).Info("Released pod CIDRs of deleted node", "node", klog.KRef("", name))
				c.wakeWaiting()
			}
			return nil
		}
		return fmt.Errorf("node ipam controller: get node %s: %w", name, err)
	}
	if !node.DeletionTimestamp.IsZero() {
		return nil // released once the Node is gone
	}
	if len(podCIDRs(node)) > 0 {
		c.report(ctx, node, c.alloc.observe(node))
		c.notWaiting(name)
		return nil
	}
	return c.allocate(ctx, node)
}

// learnExisting occupies the pod CIDRs of every Node in the cache, once,
// before any allocation: workers start only after the cache has synced, and
// every worker passes through here under learnMu.
func (c *Controller) learnExisting(ctx context.Context) error {
	c.learnMu.Lock()
	defer c.learnMu.Unlock()
	if c.learned {
		return nil
	}
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes); err != nil {
		return fmt.Errorf("node ipam controller: list nodes to learn existing pod CIDRs: %w", err)
	}
	n := 0
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if len(podCIDRs(node)) == 0 {
			continue
		}
		c.report(ctx, node, c.alloc.observe(node))
		n++
	}
	c.learned = true
	klog.FromContext(ctx).Info("Learned existing pod CIDRs", "nodes", len(nodes.Items), "withCIDRs", n)
	return nil
}

func (c *Controller) allocate(ctx context.Context, node *corev1.Node) error {
	log := klog.FromContext(ctx)
	cidrs, err := c.alloc.allocate(node)
	if err != nil {
		c.m.failures.WithLabelValues(failureExhausted).Inc()
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonCIDRNotAvailable, eventAction,
			"Node %s: no pod CIDR available: %v", node.Name, err)
		c.markWaiting(node.Name)
		return fmt.Errorf("node ipam controller: node %s: %w", node.Name, err)
	}
	strs := make([]string, len(cidrs))
	for i, p := range cidrs {
		strs[i] = p.String()
	}
	if err := c.patchPodCIDRs(ctx, node.Name, strs); err != nil {
		c.m.failures.WithLabelValues(failurePatch).Inc()
		if notApplied(err) {
			// The API server refused the change (for example the cache was
			// stale and the Node already has CIDRs): give them back; the
			// next sync reads the Node again.
			c.alloc.abandon(node.Name, node.UID)
		}
		// Otherwise the outcome is unknown: keep the CIDRs pending, so the
		// retry patches the same values instead of taking new ones.
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonCIDRAssignmentFailed, eventAction,
			"Node %s: setting pod CIDRs %s failed: %v", node.Name, strings.Join(strs, ","), err)
		return fmt.Errorf("node ipam controller: set pod CIDRs %v on node %s: %w", strs, node.Name, err)
	}
	c.notWaiting(node.Name)
	log.Info("Allocated pod CIDRs", "node", klog.KObj(node), "podCIDRs", strs)
	return nil
}

// patchPodCIDRs sets spec.podCIDR and spec.podCIDRs in one request. A JSON
// merge patch replaces the list as a whole (a strategic merge patch would
// merge it with whatever the server has).
func (c *Controller) patchPodCIDRs(ctx context.Context, name string, cidrs []string) error {
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidrs[0], "podCIDRs": cidrs}})
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	node := &corev1.Node{}
	node.Name = name
	return c.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, body))
}

// notApplied reports errors after which the patch certainly did not change
// the Node.
func notApplied(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsNotFound(err) || apierrors.IsConflict(err) ||
		apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
}

// report turns problems with a Node's existing CIDRs into Warning events and
// metrics; the controller keeps running.
func (c *Controller) report(ctx context.Context, node *corev1.Node, problems []problem) {
	for _, p := range problems {
		switch p.reason {
		case ReasonPodCIDRCollision:
			c.m.collision.Inc()
		default:
			c.m.outside.Inc()
		}
		klog.FromContext(ctx).Info("Node carries a pod CIDR that cannot be tracked", "node", klog.KObj(node),
			"podCIDR", p.cidr, "reason", p.reason, "detail", p.detail)
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, p.reason, eventAction,
			"Pod CIDR %s of node %s: %s", p.cidr, node.Name, p.detail)
	}
}

func (c *Controller) markWaiting(name string) {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	c.waiting[name] = struct{}{}
}

func (c *Controller) notWaiting(name string) {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	delete(c.waiting, name)
}

// wakeWaiting requeues Nodes that found the pool empty, now that a CIDR was
// released, so they do not sit out the rest of their backoff.
func (c *Controller) wakeWaiting() {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	for name := range c.waiting {
		c.queue.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
}

func (c *Controller) isWaiting(name string) bool {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	_, ok := c.waiting[name]
	return ok
}
