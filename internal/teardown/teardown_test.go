package teardown_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/internal/teardown"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/localcloudtest"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// world is one real localcloud holding the objects of two clusters,
// "alpha" and "beta", made through the provider as the controllers make
// them: for each, two load balancers (one for a Service named default/web
// in both clusters) and a route per node.
type world struct {
	ctx   context.Context
	admin *client.Client
	cloud cloudprovider.Interface
}

func newWorld(t *testing.T) *world {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	lc := localcloudtest.Start(t)
	// The provider as --cloud-config builds it; "alpha" is its default
	// cluster, every call below names its cluster anyway.
	prov, err := lcprovider.New(strings.NewReader("clusterName: alpha\n" + readFile(t, lc.ConfigFile)))
	if err != nil {
		t.Fatal(err)
	}
	admin := lc.Admin
	w := &world{ctx: ctx, admin: admin, cloud: prov}
	for _, c := range []string{"alpha", "beta"} {
		w.populate(t, c)
	}
	return w
}

func (w *world) populate(t *testing.T, cluster string) {
	t.Helper()
	var nodes []*corev1.Node
	for i := range 2 {
		inst, err := w.admin.CreateInstance(w.ctx, api.CreateInstanceRequest{Name: fmt.Sprintf("%s-node-%d", cluster, i), Zone: "zone-a", Region: "region-1", Type: "small"})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: inst.Name}, Spec: corev1.NodeSpec{ProviderID: lcprovider.ProviderID(inst.ID)}})
	}
	lb, _ := w.cloud.LoadBalancer()
	for i, name := range []string{"web", "api"} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(fmt.Sprintf("%s-%04d-0000-0000-000000000000", cluster[:4]+"abcd", i))},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: int32(30080 + i)}}},
		}
		if _, err := lb.EnsureLoadBalancer(w.ctx, cluster, svc, nodes); err != nil {
			t.Fatalf("%s: load balancer for %s: %v", cluster, name, err)
		}
	}
	rt, _ := w.cloud.Routes()
	for i, n := range nodes {
		r := &cloudprovider.Route{TargetNode: types.NodeName(n.Name), DestinationCIDR: fmt.Sprintf("10.244.%d.0/24", i)}
		if err := rt.CreateRoute(w.ctx, cluster, fmt.Sprintf("%s-uid-%d", cluster, i), r); err != nil {
			t.Fatalf("%s: route: %v", cluster, err)
		}
	}
}

// anHourLater is the clock of a teardown run long after the cluster's
// controller manager last changed anything: the world's objects, just
// made, are then no sign of life.
func anHourLater() time.Time { return time.Now().Add(time.Hour) }

// owned counts the load balancers and routes the cloud holds for cluster.
func (w *world) owned(t *testing.T, cluster string) (lbs, routes int) {
	t.Helper()
	all, err := w.admin.ListAllLoadBalancers(w.ctx, client.ListOptions{Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := w.admin.ListRoutes(w.ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return len(all), len(rs)
}

func TestDryRunListsAndDeletesNothing(t *testing.T) {
	w := newWorld(t)
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: w.cloud, ClusterName: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.DryRun || s.Counts[teardown.StatePlanned] != 4 || len(s.Objects) != 4 || !s.Clean() {
		t.Fatalf("dry run summary = %+v, want 4 planned objects", s)
	}
	for _, c := range []string{"alpha", "beta"} {
		if lbs, routes := w.owned(t, c); lbs != 2 || routes != 2 {
			t.Errorf("%s after a dry run: %d load balancers, %d routes; want 2 and 2", c, lbs, routes)
		}
	}
}

func TestTeardownRemovesItsClusterOnly(t *testing.T) {
	w := newWorld(t)
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: w.cloud, ClusterName: "alpha", Apply: true, Poll: 50 * time.Millisecond, Now: anHourLater})
	if err != nil {
		t.Fatal(err)
	}
	if s.DryRun || s.Counts[teardown.StateDeleted] != 4 || !s.Clean() {
		t.Fatalf("summary = %+v, want 4 deleted", s)
	}
	if lbs, routes := w.owned(t, "alpha"); lbs != 0 || routes != 0 {
		t.Errorf("alpha after teardown: %d load balancers, %d routes; want none", lbs, routes)
	}
	if lbs, routes := w.owned(t, "beta"); lbs != 2 || routes != 2 {
		t.Errorf("beta after alpha's teardown: %d load balancers, %d routes; want 2 and 2 untouched", lbs, routes)
	}
	// A second teardown finds nothing.
	again, err := teardown.Run(w.ctx, teardown.Options{Cloud: w.cloud, ClusterName: "alpha", Apply: true, Now: anHourLater})
	if err != nil || len(again.Objects) != 0 {
		t.Fatalf("second teardown = %+v, %v; want nothing found", again, err)
	}
}

// A load balancer tagged with the cluster but without the Service it was
// made for, and a route outside the cluster CIDR, are not provably the
// cluster's: both are refused and stay.
func TestTeardownRefusesWhatItCannotProve(t *testing.T) {
	w := newWorld(t)
	if _, err := w.admin.CreateLoadBalancer(w.ctx, api.CreateLoadBalancerRequest{Name: "hand-made", Cluster: "alpha",
		LoadBalancerSpec: api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: "TCP", Port: 81, NodePort: 30081}}}}); err != nil {
		t.Fatal(err)
	}
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: w.cloud, ClusterName: "alpha", Apply: true, Poll: 50 * time.Millisecond, Now: anHourLater,
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/24")}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Clean() || s.Counts[teardown.StateRefused] != 2 || s.Counts[teardown.StateDeleted] != 3 {
		t.Fatalf("summary = %+v, want 3 deleted and 2 refused", s)
	}
	for _, o := range s.Objects {
		if o.State == teardown.StateRefused && o.Reason == "" {
			t.Errorf("refused %s %s without a reason", o.Kind, o.Name)
		}
	}
	if lbs, routes := w.owned(t, "alpha"); lbs != 1 || routes != 1 {
		t.Errorf("alpha after teardown: %d load balancers, %d routes; want the refused 1 and 1", lbs, routes)
	}
}

// listless hides the provider's load-balancer list extension.
type listless struct{ cloudprovider.Interface }

func TestTeardownNeedsTheListExtension(t *testing.T) {
	w := newWorld(t)
	_, err := teardown.Run(w.ctx, teardown.Options{Cloud: listless{w.cloud}, ClusterName: "alpha", Apply: true})
	if !errors.Is(err, teardown.ErrCannotList) {
		t.Fatalf("err = %v, want ErrCannotList", err)
	}
	if lbs, routes := w.owned(t, "alpha"); lbs != 2 || routes != 2 {
		t.Errorf("alpha after a refused teardown: %d load balancers, %d routes; want all kept", lbs, routes)
	}
}

func TestTeardownNeedsAClusterName(t *testing.T) {
	if _, err := teardown.Run(context.Background(), teardown.Options{}); err == nil || !strings.Contains(err.Error(), "cluster name") {
		t.Fatalf("err = %v, want one naming the cluster name", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
