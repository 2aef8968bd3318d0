package fake_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestInstancesAnswerAsAProviderDoes(t *testing.T) {
	t.Parallel()
	c := fake.New(cloud.Instance{ProviderID: "fake://1", Name: "a", Shutdown: true,
		Metadata: cloudprovider.InstanceMetadata{InstanceType: "small"}})
	ctx := t.Context()
	if ok, err := c.InstanceExists(ctx, node("a", "")); !ok || err != nil {
		t.Errorf("exists by name = %v, %v", ok, err)
	}
	// A providerID wins over the name: a reused name is another machine.
	if ok, err := c.InstanceExists(ctx, node("a", "fake://2")); ok || err != nil {
		t.Errorf("exists by another providerID = %v, %v", ok, err)
	}
	if _, err := c.InstanceShutdown(ctx, node("b", "")); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("shutdown of a missing instance: %v", err)
	}
	md, err := c.InstanceMetadata(ctx, node("a", "fake://1"))
	if err != nil || md.ProviderID != "fake://1" || md.InstanceType != "small" {
		t.Errorf("metadata = %+v, %v", md, err)
	}
	c.DeleteInstance("fake://1")
	if list, err := c.ListInstances(ctx); err != nil || len(list) != 0 {
		t.Errorf("list after delete = %v, %v", list, err)
	}
	if got := c.CallCount("InstanceExists"); got != 2 {
		t.Errorf("InstanceExists logged %d times, want 2", got)
	}
}

func TestErrorsAndGates(t *testing.T) {
	t.Parallel()
	c := fake.New()
	boom := errors.New("boom")
	c.SetError("ListInstances", boom)
	if _, err := c.ListInstances(t.Context()); !errors.Is(err, boom) {
		t.Errorf("ListInstances = %v, want boom", err)
	}
	if _, err := c.ListRoutes(t.Context(), "k"); err != nil {
		t.Errorf("another operation failed too: %v", err)
	}
	c.SetError("ListInstances", nil)
	release := c.Gate("ListInstances")
	done := make(chan error, 1)
	go func() { _, err := c.ListInstances(context.Background()); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("gated call returned before release: %v", err)
	default:
	}
	release()
	if err := <-done; err != nil {
		t.Errorf("released call: %v", err)
	}
}

func TestLoadBalancersAreScopedToTheCluster(t *testing.T) {
	t.Parallel()
	c := fake.New()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u-1"}}
	ctx := t.Context()
	st, err := c.EnsureLoadBalancer(ctx, "one", svc, []*corev1.Node{node("b", ""), node("a", "")})
	if err != nil || len(st.Ingress) != 1 {
		t.Fatalf("ensure = %v, %v", st, err)
	}
	if _, exists, _ := c.GetLoadBalancer(ctx, "two", svc); exists {
		t.Error("another cluster sees the load balancer")
	}
	if err := c.UpdateLoadBalancer(ctx, "two", svc, nil); err == nil {
		t.Error("update of a load balancer another cluster owns succeeded")
	}
	if list, _ := c.ListLoadBalancers(ctx, "one"); len(list) != 1 || list[0].ServiceUID != "u-1" {
		t.Errorf("list = %+v", list)
	}
	if b := c.Balancers(); len(b) != 1 || b[0].Hosts[0] != "a" {
		t.Errorf("balancers = %+v", b)
	}
	if err := c.EnsureLoadBalancerDeleted(ctx, "one", svc); err != nil || len(c.Balancers()) != 0 {
		t.Errorf("delete: %v, left %v", err, c.Balancers())
	}
}

func TestUpstreamHidesTheExtensions(t *testing.T) {
	t.Parallel()
	p := fake.Upstream(fake.New())
	if _, ok := p.(cloud.InstanceLister); ok {
		t.Error("the provider lists instances")
	}
	in, _ := p.InstancesV2()
	if _, ok := in.(cloud.InstanceLister); ok {
		t.Error("its InstancesV2 lists instances")
	}
	lb, _ := p.LoadBalancer()
	if _, ok := lb.(cloud.LoadBalancerLister); ok {
		t.Error("its LoadBalancer lists load balancers")
	}
}
