package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/controllerctx"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ErrObserveOnly is returned, wrapped, by a load-balancer call observe mode
// refused: the call was recorded as a planned change and never reached the
// provider. A load balancer's status cannot be made up, so the controller
// sees the call fail; route calls, which return nothing, are answered as
// done.
var ErrObserveOnly = errors.New("observe mode: mutating cloud call refused")

// Cloud is observe mode's side of the cloud: it wraps the instrumented
// cloud the controllers would use, passes every read through, and records
// every mutating call as a planned change instead of making it.
type Cloud struct {
	cloud.Cloud
	rec *Recorder
	// refused counts a refused call under the wrapper's request metric.
	refused func(op string)
}

var _ cloud.Cloud = (*Cloud)(nil)

// NewCloud stacks observe mode on c. refused, when not nil, is told the
// operation of every call it refuses (the wrapper's CountRefused).
func NewCloud(c cloud.Cloud, rec *Recorder, refused func(op string)) *Cloud {
	if refused == nil {
		refused = func(string) {}
	}
	return &Cloud{Cloud: c, rec: rec, refused: refused}
}

// record notes a planned change for the controller ctx names
// (controllerctx.With): the controllers share the cloud, so the call itself
// does not tell.
func (c *Cloud) record(ctx context.Context, op string, ch Change) {
	c.refused(op)
	ch.Controller = controllerctx.From(ctx)
	if ch.Controller == "" {
		ch.Controller = UnknownController
	}
	c.rec.Record(ctx, ch)
}

func (c *Cloud) refuse(ctx context.Context, op string, ch Change) error {
	c.record(ctx, op, ch)
	return fmt.Errorf("cloud %s: %w", op, ErrObserveOnly)
}

// LoadBalancer returns the load balancers, their mutating calls planned.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := c.Cloud.LoadBalancer()
	if !ok {
		return nil, false
	}
	return &loadBalancer{LoadBalancer: lb, c: c}, true
}

// Routes returns the routes, their mutating calls planned.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	r, ok := c.Cloud.Routes()
	if !ok {
		return nil, false
	}
	return &routes{Routes: r, c: c}, true
}

// Instances returns the legacy instances, AddSSHKeyToAllInstances planned.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) {
	in, ok := c.Cloud.Instances()
	if !ok {
		return nil, false
	}
	return &instances{Instances: in, c: c}, true
}

type instances struct {
	cloudprovider.Instances
	c *Cloud
}

func (w *instances) AddSSHKeyToAllInstances(ctx context.Context, user string, _ []byte) error {
	return w.c.refuse(ctx, "AddSSHKeyToAllInstances", Change{Kind: "instances", Action: ActionUpdate,
		Object: "all instances", Diff: "SSH key added for user " + user})
}

type routes struct {
	cloudprovider.Routes
	c *Cloud
}

// CreateRoute plans the creation and answers as if it were done, so that
// the route controller plans the Node's condition as the creation would
// leave it rather than as a failure.
func (w *routes) CreateRoute(ctx context.Context, _, _ string, route *cloudprovider.Route) error {
	w.c.record(ctx, "CreateRoute", routeChange(ActionCreate, route))
	return nil
}

// DeleteRoute plans the deletion and answers as if it were done.
func (w *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	w.c.record(ctx, "DeleteRoute", routeChange(ActionDelete, route))
	return nil
}

type loadBalancer struct {
	cloudprovider.LoadBalancer
	c *Cloud
}

func (w *loadBalancer) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	return w.plan(ctx, "EnsureLoadBalancer", cluster, svc, nodes)
}

func (w *loadBalancer) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	_, err := w.plan(ctx, "UpdateLoadBalancer", cluster, svc, nodes)
	return err
}

// plan stands for EnsureLoadBalancer and UpdateLoadBalancer: reads tell
// whether the load balancer exists and, with a LoadBalancerPlanner,
// whether anything would change. When nothing would, it answers as the
// provider would (the current status) so the controller carries on as it
// does beside an up-to-date load balancer.
func (w *loadBalancer) plan(ctx context.Context, op, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	ch := lbChange(w.GetLoadBalancerName(ctx, cluster, svc), svc)
	st, exists, err := w.GetLoadBalancer(ctx, cluster, svc)
	if err != nil {
		return nil, err
	}
	if !exists {
		ch.Action = ActionCreate
		ch.Diff = fmt.Sprintf("ports %s, backends [%s]", ports(svc), nodeNames(nodes))
		return nil, w.c.refuse(ctx, op, ch)
	}
	ch.Action = ActionUpdate
	planner, ok := w.c.LoadBalancerPlanner()
	if !ok {
		ch.Diff = "unknown: the provider cannot plan (no LoadBalancerPlanner); backends [" + nodeNames(nodes) + "]"
		return nil, w.c.refuse(ctx, op, ch)
	}
	diff, err := planner.PlanLoadBalancer(ctx, cluster, svc, nodes)
	if err != nil {
		return nil, err
	}
	if len(diff) == 0 {
		return st, nil
	}
	ch.Diff = strings.Join(diff, "; ")
	return nil, w.c.refuse(ctx, op, ch)
}

func (w *loadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	_, exists, err := w.GetLoadBalancer(ctx, cluster, svc)
	if err != nil || !exists {
		return err
	}
	ch := lbChange(w.GetLoadBalancerName(ctx, cluster, svc), svc)
	ch.Action, ch.Diff = ActionDelete, "load balancer deleted"
	return w.c.refuse(ctx, "EnsureLoadBalancerDeleted", ch)
}

func lbChange(name string, svc *corev1.Service) Change {
	return Change{Kind: "load-balancer",
		Object: name + " (service " + svc.Namespace + "/" + svc.Name + ")"}
}

func nodeNames(nodes []*corev1.Node) string {
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return strings.Join(names, ",")
}

func ports(svc *corev1.Service) string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%s/%d", p.Protocol, p.Port))
	}
	return strings.Join(out, ",")
}

func routeChange(action string, r *cloudprovider.Route) Change {
	return Change{Kind: "route", Action: action,
		Object: string(r.TargetNode), Diff: r.DestinationCIDR + " → " + string(r.TargetNode)}
}
