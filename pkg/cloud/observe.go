package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/observe"
)

// ErrObserveOnly is returned, wrapped, by every mutating cloud call in
// observe mode (Options.Observe set): the call was recorded as a planned
// change and never reached the provider.
var ErrObserveOnly = errors.New("observe mode: mutating cloud call refused")

// ResultRefused counts mutating calls observe mode refused.
const ResultRefused = "refused"

// LoadBalancerPlanner is an optional extension that makes observe mode
// exact for load balancers: PlanLoadBalancer answers what EnsureLoadBalancer
// (or UpdateLoadBalancer) would change for an existing load balancer,
// without changing it, as human-readable "what: old → new" lines; none when
// it is in sync. Without it, observe mode reports every ensure of an
// existing load balancer as a possible update, since only the provider
// knows how a Service maps onto its load balancers.
type LoadBalancerPlanner interface {
	PlanLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) ([]string, error)
}

// refuse records a planned change and returns the error a mutating call
// returns in observe mode. The change belongs to the controller ctx names
// (observe.WithController): the controllers share the cloud, so the call
// itself does not tell.
func (c *Cloud) refuse(ctx context.Context, op string, ch observe.Change) error {
	c.metrics.requests.WithLabelValues(op, ResultRefused).Inc()
	ch.Controller = observe.ControllerFrom(ctx)
	if ch.Controller == "" {
		ch.Controller = observe.UnknownController
	}
	c.observer.Record(ctx, ch)
	return fmt.Errorf("cloud %s: %w", op, ErrObserveOnly)
}

func lbChange(name string, svc *corev1.Service) observe.Change {
	return observe.Change{Kind: "load-balancer",
		Object: name + " (service " + svc.Namespace + "/" + svc.Name + ")"}
}

func nodeNames(nodes []*corev1.Node) string {
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return strings.Join(names, ",")
}

// observeEnsure stands for EnsureLoadBalancer and UpdateLoadBalancer in
// observe mode: reads tell whether the load balancer exists and, with a
// LoadBalancerPlanner, whether anything would change. When nothing would,
// it answers as the provider would (the current status) so the controller
// carries on as it does beside an up-to-date load balancer.
func (w *loadBalancer) observeEnsure(ctx context.Context, op, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	ch := lbChange(w.lb.GetLoadBalancerName(ctx, cluster, svc), svc)
	st, exists, err := w.GetLoadBalancer(ctx, cluster, svc)
	if err != nil {
		return nil, err
	}
	if !exists {
		ch.Action = observe.ActionCreate
		ch.Diff = fmt.Sprintf("ports %s, backends [%s]", ports(svc), nodeNames(nodes))
		return nil, w.c.refuse(ctx, op, ch)
	}
	planner, ok := w.lb.(LoadBalancerPlanner)
	if !ok {
		planner, ok = w.c.provider.(LoadBalancerPlanner)
	}
	ch.Action = observe.ActionUpdate
	if !ok {
		ch.Diff = "unknown: the provider cannot plan (no LoadBalancerPlanner); backends [" + nodeNames(nodes) + "]"
		return nil, w.c.refuse(ctx, op, ch)
	}
	diff, err := call(ctx, w.c, "PlanLoadBalancer", func(ctx context.Context) ([]string, error) {
		return planner.PlanLoadBalancer(ctx, cluster, svc, nodes)
	})
	if err != nil {
		return nil, err
	}
	if len(diff) == 0 {
		return st, nil
	}
	ch.Diff = strings.Join(diff, "; ")
	return nil, w.c.refuse(ctx, op, ch)
}

func (w *loadBalancer) observeDelete(ctx context.Context, cluster string, svc *corev1.Service) error {
	_, exists, err := w.GetLoadBalancer(ctx, cluster, svc)
	if err != nil || !exists {
		return err
	}
	ch := lbChange(w.lb.GetLoadBalancerName(ctx, cluster, svc), svc)
	ch.Action, ch.Diff = observe.ActionDelete, "load balancer deleted"
	return w.c.refuse(ctx, "EnsureLoadBalancerDeleted", ch)
}

func ports(svc *corev1.Service) string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%s/%d", p.Protocol, p.Port))
	}
	return strings.Join(out, ",")
}

func routeChange(action string, r *cloudprovider.Route) observe.Change {
	return observe.Change{Kind: "route", Action: action,
		Object: string(r.TargetNode), Diff: r.DestinationCIDR + " → " + string(r.TargetNode)}
}
