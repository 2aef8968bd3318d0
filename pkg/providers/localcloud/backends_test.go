package localcloud_test

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// A Node whose instance is gone (not yet deleted by the lifecycle
// controller) must not block the load balancer writes of the cluster:
// creates and updates skip it and keep the live backends.
func TestLoadBalancerSkipsBackendsOfGoneInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	a, b, c := e.instance(t, "a"), e.instance(t, "b"), e.instance(t, "c")
	if _, err := e.admin.DeleteInstance(e.ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	lbs, _ := e.cloud.LoadBalancer()
	svc := service(30080, corev1.ProtocolTCP)
	nodes := []*corev1.Node{node("a", "localcloud://"+a.ID), node("b", "localcloud://"+b.ID), node("c", "localcloud://"+c.ID)}

	// Create with a gone instance among the nodes.
	if _, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil && !isRetry(err) {
		t.Fatalf("create with a gone instance among the nodes: %v", err)
	}
	if got := cloudBackends(t, e); !slices.Equal(got, sorted(a.ID, c.ID)) {
		t.Fatalf("backends after create = %v, want %v", got, sorted(a.ID, c.ID))
	}

	// Update after another instance goes.
	if _, err := e.admin.DeleteInstance(e.ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	d := e.instance(t, "d")
	nodes = append(nodes, node("d", "localcloud://"+d.ID))
	if err := lbs.UpdateLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatalf("update with gone instances among the nodes: %v", err)
	}
	if got := cloudBackends(t, e); !slices.Equal(got, sorted(a.ID, d.ID)) {
		t.Fatalf("backends after update = %v, want %v", got, sorted(a.ID, d.ID))
	}

	// Observe mode's plan agrees: the gone instances are no backend to add.
	planner := lbs.(cloud.LoadBalancerPlanner)
	if plan, err := planner.PlanLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil || len(plan) != 0 {
		t.Fatalf("plan with gone instances among the nodes = %q, %v; want nothing", plan, err)
	}
	f := e.instance(t, "f")
	nodes = append(nodes, node("f", "localcloud://"+f.ID))
	plan, err := planner.PlanLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	if want := "backends: +[" + f.ID + "] -[]"; err != nil || !slices.Equal(plan, []string{want}) {
		t.Fatalf("plan with a new node = %q, %v; want %q", plan, err, want)
	}
}

func cloudBackends(t *testing.T, e *env) []string {
	t.Helper()
	all, err := e.admin.ListAllLoadBalancers(e.ctx, client.ListOptions{Cluster: "kubernetes"})
	if err != nil || len(all) != 1 {
		t.Fatalf("load balancers: %v %+v", err, all)
	}
	return sorted(all[0].Backends...)
}

func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func isRetry(err error) bool {
	var retry *cloudproviderapi.RetryError
	return errors.As(err, &retry)
}
