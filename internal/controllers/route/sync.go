package route

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/ownership"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// sync runs one full pass: list the table once, delete what no Node
// accounts for, create what routable Nodes miss, then bring every routable
// Node's NetworkUnavailable condition in line. It reports whether a route
// was created or deleted.
func (c *Controller) sync(ctx context.Context, _ pass) (bool, error) {
	log := klog.FromContext(ctx)
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes); err != nil {
		return false, fmt.Errorf("route controller: list nodes: %w", err)
	}
	// Another platform routes its own Nodes: a foreign Node gets no route
	// and its NetworkUnavailable condition is not written, only the one
	// this controller wrote before the Node was foreign removed.
	var foreign []corev1.Node
	nodes.Items = slices.DeleteFunc(nodes.Items, func(n corev1.Node) bool {
		if c.ownership.Of(&n) != ownership.Foreign {
			return false
		}
		foreign = append(foreign, n)
		return true
	})
	// An API write only, so done even while the cloud is down.
	foreignErr := c.clearForeignConditions(ctx, foreign)
	routes, err := c.routes.ListRoutes(ctx, c.cfg.ClusterName)
	if err != nil {
		return false, errors.Join(fmt.Errorf("route controller: list routes of cluster %s: %w", c.cfg.ClusterName, err), foreignErr)
	}
	p := buildPlan(nodes.Items, routes, c.cfg.ClusterCIDRs)
	log.V(4).Info("Route pass", "nodes", len(nodes.Items), "routes", len(routes), "delete", len(p.remove), "create", len(p.create))

	deleted := c.deleteRoutes(ctx, p.remove)
	if deleted > 0 {
		// Room was made in the table: failed creations may succeed now.
		c.backoff.reset()
	}
	created := c.createRoutes(ctx, p)
	c.m.backedOff.Set(float64(c.backoff.retain(p.wanted)))
	c.explainPass(p, created)
	return deleted > 0 || len(created) > 0, errors.Join(c.updateConditions(ctx, p), foreignErr)
}

// parallel runs fn for every item with at most c.cfg.Concurrency at once.
func parallel[T any](c *Controller, items []T, fn func(T)) {
	sem := make(chan struct{}, c.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(it)
		})
	}
	wg.Wait()
}

// deleteRoutes deletes routes in parallel and returns how many went.
func (c *Controller) deleteRoutes(ctx context.Context, routes []*cloudprovider.Route) int {
	log := klog.FromContext(ctx)
	var mu sync.Mutex
	deleted := 0
	parallel(c, routes, func(r *cloudprovider.Route) {
		if err := c.routes.DeleteRoute(ctx, c.cfg.ClusterName, r); err != nil {
			c.m.deletes.WithLabelValues(kit.ResultError).Inc()
			log.Error(err, "Could not delete route", "route", r.Name, "destination", r.DestinationCIDR, "target", r.TargetNode)
			return
		}
		c.m.deletes.WithLabelValues(kit.ResultSuccess).Inc()
		log.Info("Deleted route", "route", r.Name, "destination", r.DestinationCIDR, "target", r.TargetNode, "blackhole", r.Blackhole)
		mu.Lock()
		deleted++
		mu.Unlock()
	})
	return deleted
}

// createRoutes creates the missing routes whose backoff allows a try,
// records the outcome per Node in p.routable and returns the Nodes one of
// whose routes it created.
func (c *Controller) createRoutes(ctx context.Context, p *plan) map[string]bool {
	log := klog.FromContext(ctx)
	now := c.clock.Now()
	var due []wantedRoute
	for _, w := range p.create {
		if c.backoff.ready(w.key, now) {
			due = append(due, w)
		} else {
			log.V(4).Info("Route creation backing off", "node", klog.KObj(w.node), "destination", w.key.cidr)
		}
	}
	var mu sync.Mutex
	created := map[string]bool{}
	parallel(c, due, func(w wantedRoute) {
		r := &cloudprovider.Route{
			TargetNode:          types.NodeName(w.node.Name),
			TargetNodeAddresses: w.node.Status.Addresses,
			DestinationCIDR:     w.key.cidr.String(),
		}
		// The call is recorded for the Node in its explain record.
		err := c.routes.CreateRoute(explain.WithObject(ctx, nodeRef(w.node.Name)), c.cfg.ClusterName, w.nameHint, r)
		mu.Lock()
		defer mu.Unlock()
		nr := p.routable[w.node.Name]
		if err == nil {
			c.m.creates.WithLabelValues(kit.ResultSuccess).Inc()
			c.backoff.succeeded(w.key)
			nr.missing--
			created[w.node.Name] = true
			log.Info("Created route", "node", klog.KObj(w.node), "destination", w.key.cidr, "nameHint", w.nameHint)
			return
		}
		c.m.creates.WithLabelValues(kit.ResultError).Inc()
		if errors.Is(err, cloud.ErrQuotaExceeded) {
			c.m.quotaExceeded()
		}
		retryAt := c.backoff.failed(w.key, c.clock.Now(), cloud.IsCloudFault(err))
		msg := createError(w.node, c.ownership, err)
		nr.errs = append(nr.errs, fmt.Sprintf("%s: %s", w.key.cidr, msg))
		log.Error(err, "Could not create route", "node", klog.KObj(w.node), "destination", w.key.cidr, "retryAt", retryAt)
		c.recorder.Eventf(w.node, nil, corev1.EventTypeWarning, ReasonFailedToCreateRoute, eventAction,
			"Could not create route %s for node %s: %s", w.key.cidr, w.node.Name, msg)
	})
	return created
}

// wantCondition is the NetworkUnavailable condition a routable Node should
// carry after this pass.
func wantCondition(nr *nodeRoutes) (corev1.ConditionStatus, string, string) {
	if nr.missing <= 0 {
		cidrs := strings.Join(nr.node.Spec.PodCIDRs, ", ")
		return corev1.ConditionFalse, ConditionRouteCreated, msgRoutesExist + cidrs
	}
	if len(nr.errs) > 0 {
		return corev1.ConditionTrue, ConditionNoRouteCreated, msgCreateFailed + strings.Join(nr.errs, "; ")
	}
	return corev1.ConditionTrue, ConditionNoRouteCreated, fmt.Sprintf(msgBackingOffFmt, nr.missing)
}

// updateConditions patches NetworkUnavailable on routable Nodes where its
// status or reason differs from what this pass found.
func (c *Controller) updateConditions(ctx context.Context, p *plan) error {
	names := make([]string, 0, len(p.routable))
	for name := range p.routable {
		names = append(names, name)
	}
	sort.Strings(names)
	var mu sync.Mutex
	var errs []string
	parallel(c, names, func(name string) {
		nr := p.routable[name]
		status, reason, msg := wantCondition(nr)
		cur := condition(nr.node)
		if cur != nil && cur.Status == status && cur.Reason == reason {
			return
		}
		transition := metav1.NewTime(c.clock.Now())
		if cur != nil && cur.Status == status {
			transition = cur.LastTransitionTime // only the reason changes
		}
		if err := c.patchCondition(ctx, nr.node, corev1.NodeCondition{
			Type: corev1.NodeNetworkUnavailable, Status: status, Reason: reason, Message: msg,
			LastTransitionTime: transition, LastHeartbeatTime: metav1.NewTime(c.clock.Now()),
		}); err != nil {
			mu.Lock()
			errs = append(errs, err.Error())
			mu.Unlock()
			return
		}
		klog.FromContext(ctx).V(2).Info("Set NetworkUnavailable", "node", klog.KObj(nr.node), "status", status, "reason", reason)
	})
	if len(errs) > 0 {
		return fmt.Errorf("route controller: update NetworkUnavailable: %s", strings.Join(errs, "; "))
	}
	return nil
}

func condition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// patchCondition writes one condition with a strategic merge patch, which
// merges status.conditions by type and leaves the kubelet's others alone.
func (c *Controller) patchCondition(ctx context.Context, n *corev1.Node, cond corev1.NodeCondition) error {
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if err != nil {
		return fmt.Errorf("encode condition patch: %w", err)
	}
	target := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
	if err := c.client.Status().Patch(ctx, target, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		return fmt.Errorf("patch node %s: %w", n.Name, err)
	}
	return nil
}
