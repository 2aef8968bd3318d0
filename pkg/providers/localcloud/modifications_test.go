package localcloud_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// modification finds kind/name in the cluster's modifications.
func (e *env) modification(t *testing.T, cluster, kind, name string) (cloud.Modification, bool) {
	t.Helper()
	mods, err := e.cloud.(cloud.ModificationLister).ListModifications(e.ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		if m.Kind == kind && m.Name == name {
			return m, true
		}
	}
	return cloud.Modification{}, false
}

// inside reports whether at lies within [from, to].
func inside(at, from, to time.Time) bool { return !at.Before(from) && !at.After(to) }

// The cloud records when and by whom a load balancer's spec was last set
// and a route created: creation and a real update move the time, an
// ensure with nothing to change does not, and a load balancer being
// deleted is no longer reported. Another cluster sees none of it.
func TestListModifications(t *testing.T) {
	e := newEnv(t, 0)
	a, b := e.instance(t, "node-a"), e.instance(t, "node-b")
	nodes := []*corev1.Node{node("node-a", lcprovider.ProviderID(a.ID))}
	svc := service(30080, corev1.ProtocolTCP)
	lb, _ := e.cloud.LoadBalancer()
	name := cloudprovider.DefaultLoadBalancerName(svc)

	before := time.Now()
	if _, err := lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	created, ok := e.modification(t, "kubernetes", cloud.KindLoadBalancer, name)
	if !ok || !inside(created.At, before, time.Now()) || created.By != lcprovider.UserAgent() {
		t.Fatalf("after the creation: %+v (reported %v), want it dated by the creation and made by %q", created, ok, lcprovider.UserAgent())
	}
	if _, err := lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if same, _ := e.modification(t, "kubernetes", cloud.KindLoadBalancer, name); !same.At.Equal(created.At) {
		t.Errorf("an ensure with nothing to change moved the time from %s to %s", created.At, same.At)
	}
	before = time.Now()
	nodes = append(nodes, node("node-b", lcprovider.ProviderID(b.ID)))
	if err := lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if updated, _ := e.modification(t, "kubernetes", cloud.KindLoadBalancer, name); !inside(updated.At, before, time.Now()) {
		t.Errorf("after an update the time is %s, want it dated by the update", updated.At)
	}

	rt, _ := e.cloud.Routes()
	before = time.Now()
	if err := rt.CreateRoute(e.ctx, "kubernetes", "uid-a", &cloudprovider.Route{TargetNode: types.NodeName("node-a"), DestinationCIDR: "10.244.0.0/24"}); err != nil {
		t.Fatal(err)
	}
	route, ok := e.modification(t, "kubernetes", cloud.KindRoute, "kubernetes-uid-a")
	if !ok || !inside(route.At, before, time.Now()) || route.By != lcprovider.UserAgent() {
		t.Errorf("route: %+v (reported %v), want it dated by its creation and made by %q", route, ok, lcprovider.UserAgent())
	}

	// Another cluster's list holds nothing of this one's.
	if mods, err := e.cloud.(cloud.ModificationLister).ListModifications(e.ctx, "other"); err != nil || len(mods) != 0 {
		t.Errorf("cluster other: %+v, %v; want nothing", mods, err)
	}
	// A caller that names itself otherwise is recorded as such.
	if _, err := e.admin.CreateLoadBalancer(e.ctx, api.CreateLoadBalancerRequest{Name: "by-hand", Cluster: "kubernetes",
		LoadBalancerSpec: api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: "TCP", Port: 81, NodePort: 30081}}}}); err != nil {
		t.Fatal(err)
	}
	if hand, _ := e.modification(t, "kubernetes", cloud.KindLoadBalancer, "by-hand"); hand.By != "localcloud-client" {
		t.Errorf("a load balancer made with the admin client is by %q, want localcloud-client", hand.By)
	}
	if err := lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if m, ok := e.modification(t, "kubernetes", cloud.KindLoadBalancer, name); ok {
		t.Errorf("a deleted load balancer is still reported: %+v", m)
	}
}
