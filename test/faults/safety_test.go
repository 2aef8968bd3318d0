package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/ownership"
	"github.com/stratus-ccm/stratus/internal/teardown"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// otherClusterName is a second cluster sharing the cloud with the world's.
const otherClusterName = "faults-other"

// otherCluster is what the second cluster keeps in the cloud: load
// balancers (one named exactly as one of the world's, with the same
// Service tags, the shared-name case of digitalocean-cloud-controller-
// manager#916) and a route. Nothing of the world may touch them.
type otherCluster struct {
	lbs    map[string]string // id → "name status backends"
	routes []string          // "name cidr instance"
}

func lbKey(lb api.LoadBalancer) string {
	return fmt.Sprintf("%s %s %v", lb.Name, lb.Status, slices.Sorted(slices.Values(lb.Backends)))
}

// otherState reads the second cluster's objects as otherCluster keeps them.
func (w *world) otherState(ctx context.Context) (map[string]string, []string, error) {
	lbs, err := w.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: otherClusterName})
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]string{}
	for _, lb := range lbs {
		byID[lb.ID] = lbKey(lb)
	}
	rs, err := w.cloud.ListRoutes(ctx, otherClusterName)
	if err != nil {
		return nil, nil, err
	}
	var routes []string
	for _, r := range rs {
		routes = append(routes, r.Name+" "+r.DestinationCIDR+" "+r.InstanceID)
	}
	slices.Sort(routes)
	return byID, routes, nil
}

// otherUntouched is the invariant of the two-clusters scenario, checked
// after every later fault: the other cluster's objects are exactly as it
// made them.
func (w *world) otherUntouched(ctx context.Context) string {
	w.mu.Lock()
	o := w.other
	w.mu.Unlock()
	if o == nil {
		return ""
	}
	lbs, routes, err := w.otherState(ctx)
	if err != nil {
		return "list the other cluster's objects: " + err.Error()
	}
	if !maps.Equal(lbs, o.lbs) || !slices.Equal(routes, o.routes) {
		return fmt.Sprintf("the other cluster's objects changed: load balancers %v, routes %v; want %v, %v", lbs, routes, o.lbs, o.routes)
	}
	return ""
}

// twoClusters: a second cluster keeps a load balancer with the name and
// Service tags of one of the world's, another for a Service the world does
// not have (an orphan, seen from the world), and a route, in the same
// cloud. The world's Service of the shared name is deleted; its own load
// balancer goes, the other cluster's stays, and the orphan collector,
// given several passes past its grace period, deletes none of them.
func twoClusters(t *testing.T, w *world, leader *replica) *replica {
	ctx := w.ctx
	web, err := w.cs.CoreV1().Services("baseline").Get(ctx, "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := w.cloud.CreateInstance(ctx, api.CreateInstanceRequest{Name: "other-node", Zone: region + "a", Region: region, Type: "standard-2",
		Tags: map[string]string{api.TagCluster: otherClusterName}})
	if err != nil {
		t.Fatal(err)
	}
	spec := api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: 30080}}, Backends: []string{inst.ID}}
	for _, req := range []api.CreateLoadBalancerRequest{
		{Name: cloudprovider.DefaultLoadBalancerName(web), Cluster: otherClusterName, LoadBalancerSpec: spec, Tags: map[string]string{
			api.TagServiceNamespace: web.Namespace, api.TagServiceName: web.Name, api.TagServiceUID: string(web.UID)}},
		{Name: "aother0000000000000000000000000", Cluster: otherClusterName, LoadBalancerSpec: spec, Tags: map[string]string{
			api.TagServiceNamespace: "default", api.TagServiceName: "gone", api.TagServiceUID: "0d1e2f30-0000-4000-8000-000000000000"}},
	} {
		if _, err := w.cloud.CreateLoadBalancer(ctx, req); err != nil {
			t.Fatalf("create the other cluster's load balancer %s: %v", req.Name, err)
		}
	}
	if _, err := w.cloud.CreateRoute(ctx, otherClusterName, api.CreateRouteRequest{Name: "other-route", DestinationCIDR: "10.99.0.0/24", InstanceID: inst.ID}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the other cluster's load balancers to be active", convergeTimeout, func(ctx context.Context) (bool, string) {
		lbs, _, err := w.otherState(ctx)
		if err != nil {
			return false, err.Error()
		}
		active := 0
		for _, v := range lbs {
			if strings.Contains(v, " "+string(api.LBActive)+" ") {
				active++
			}
		}
		return active == 2, fmt.Sprint(lbs)
	})
	lbs, routes, err := w.otherState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.other = &otherCluster{lbs: lbs, routes: routes}
	w.mu.Unlock()

	before, err := w.answered(ctx, 200, "ListLoadBalancers")
	if err != nil {
		t.Fatal(err)
	}
	w.deleteServices("baseline", "web-0")
	// Past the grace period, several orphan passes.
	waitFor(ctx, t, "orphan passes past the grace period", convergeTimeout, func(ctx context.Context) (bool, string) {
		n, err := w.answered(ctx, 200, "ListLoadBalancers")
		if err != nil {
			return false, err.Error()
		}
		return n-before >= int64(2*orphanGrace/driftPeriod)+2, fmt.Sprintf("%d load balancer lists", n-before)
	})
	if why := w.otherUntouched(ctx); why != "" {
		t.Error(why)
	}
	w.settle(t, "two-clusters", time.Now())
	t.Logf("fault-safety scenario=two-clusters foreign-objects-touched=0 other-load-balancers=%d other-routes=%d", len(lbs), len(routes))
	return leader
}

// hybrid: Nodes of another platform join the cluster NotReady, one with an
// onprem:// providerID, one without providerID but naming its platform;
// one of the world's own Nodes is NotReady beside them, so every monitor
// period lists instances. The foreign Nodes are never initialized, tainted
// or deleted, and are no load balancer backends (the invariants).
func hybrid(t *testing.T, w *world, leader *replica) *replica {
	ctx := w.ctx
	foreign := map[string]localcluster.NodeOptions{
		"onprem-0": {ProviderID: "onprem://rack1/onprem-0", Unmanaged: true},
		"edge-0":   {Unmanaged: true},
	}
	for name, o := range foreign {
		n := localcluster.NewNode(name, o)
		if o.ProviderID == "" {
			n.Annotations[ownership.AnnotationPlatform] = "edge"
		}
		if _, err := w.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.setReady(name, corev1.ConditionFalse)
		w.mu.Lock()
		w.foreign[name] = o.ProviderID
		w.mu.Unlock()
	}
	w.addNodes("hybrid-own")
	waitFor(ctx, t, "hybrid-own to be initialized", convergeTimeout, w.converged)
	w.setReady("hybrid-own", corev1.ConditionFalse)
	before, err := w.answered(ctx, 200, "ListInstances")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "five monitor periods with the foreign nodes NotReady", convergeTimeout, func(ctx context.Context) (bool, string) {
		n, err := w.answered(ctx, 200, "ListInstances")
		if err != nil {
			return false, err.Error()
		}
		return n-before >= 5, fmt.Sprintf("%d instance lists", n-before)
	})
	w.setReady("hybrid-own", corev1.ConditionTrue)
	w.settle(t, "hybrid", time.Now())
	t.Logf("fault-safety scenario=hybrid foreign-nodes=%d foreign-objects-touched=0", len(foreign))
	return leader
}

// shortList: five Nodes go NotReady; one's instance is really gone, and
// the cloud's list answers leave out the instances of two others (half of
// those that exist). Only the really gone one is deleted: the per-node
// check contradicts the list for the other two.
func shortList(t *testing.T, w *world, leader *replica) *replica {
	ctx := w.ctx
	nodes := []string{"short-0", "short-1", "short-2", "short-3", "short-4"}
	w.addNodes(nodes...)
	waitFor(ctx, t, "the short-list nodes to be initialized", convergeTimeout, w.converged)
	w.mu.Lock()
	hidden := []string{w.nodes["short-0"], w.nodes["short-1"]}
	w.mu.Unlock()
	w.deleteInstance("short-4")
	w.proxy.hide(hidden...)
	before := w.proxy.shortLists()
	for _, n := range nodes {
		w.setReady(n, corev1.ConditionFalse)
	}
	waitFor(ctx, t, "five short list answers and the gone node deleted", convergeTimeout, func(ctx context.Context) (bool, string) {
		_, err := w.cs.CoreV1().Nodes().Get(ctx, "short-4", metav1.GetOptions{})
		short := w.proxy.shortLists() - before
		return err != nil && short >= 5, fmt.Sprintf("%d short lists, short-4: %v", short, err)
	})
	for _, n := range nodes[:4] {
		if _, err := w.cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("node %s, whose instance exists, during the short lists: %v", n, err)
		}
	}
	unconfirmed := w.eventCount(ctx, nodelifecycle.ReasonDeletionUnconfirmed, "short-0", "short-1")
	if unconfirmed == 0 {
		t.Errorf("no %s event for the nodes the list left out", nodelifecycle.ReasonDeletionUnconfirmed)
	}
	w.proxy.reveal()
	for _, n := range nodes[:4] {
		w.setReady(n, corev1.ConditionTrue)
	}
	w.settle(t, "short-list", time.Now())
	t.Logf("fault-safety scenario=short-list short-lists=%d wrong-deletions=0 really-gone-deleted=1 unconfirmed-events=%d", w.proxy.shortLists()-before, unconfirmed)
	return leader
}

// massOutage: a whole group of eight Nodes goes NotReady at once, the
// cloud's list answers leave out all their instances, and three of them
// are really gone. None of the five whose instance exists is deleted; the
// three gone ones are deleted, no more than the deletion cap allows per
// window, the rest held with NodeDeletionCapped until the window moves.
func massOutage(t *testing.T, w *world, leader *replica) *replica {
	ctx := w.ctx
	var nodes []string
	for i := range 8 {
		nodes = append(nodes, fmt.Sprintf("zone-%d", i))
	}
	w.addNodes(nodes...)
	waitFor(ctx, t, "the outage nodes to be initialized", convergeTimeout, w.converged)
	w.mu.Lock()
	var ids []string
	for _, n := range nodes {
		ids = append(ids, w.nodes[n])
	}
	w.mu.Unlock()
	w.proxy.hide(ids...)
	for _, n := range nodes {
		w.setReady(n, corev1.ConditionFalse)
	}
	for _, n := range nodes[5:] {
		w.deleteInstance(n)
	}
	waitFor(ctx, t, "the deletion cap to hold a deletion back", convergeTimeout, func(ctx context.Context) (bool, string) {
		held := w.eventCount(ctx, nodelifecycle.ReasonDeletionCapped, nodes[5:]...)
		return held > 0, fmt.Sprintf("%d %s events", held, nodelifecycle.ReasonDeletionCapped)
	})
	for _, n := range nodes[:5] {
		if _, err := w.cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("node %s, whose instance exists, during the outage: %v", n, err)
		}
	}
	// The kubelets come back; the cloud's list is whole again.
	w.proxy.reveal()
	for _, n := range nodes[:5] {
		w.setReady(n, corev1.ConditionTrue)
	}
	// The held deletions wait for the window: the figure includes it.
	d := w.settle(t, "mass-outage", time.Now())
	t.Logf("fault-safety scenario=mass-outage wrong-deletions=0 really-gone-deleted=3 capped-events=%d converged-seconds=%.1f window=%s",
		w.eventCount(ctx, nodelifecycle.ReasonDeletionCapped, nodes[5:]...), d.Seconds(), deletionWindow)
	return leader
}

// eventCount counts the events with reason about the named objects.
func (w *world) eventCount(ctx context.Context, reason string, names ...string) int {
	evs, err := w.cs.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Logf("list events: %v", err)
		return 0
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == reason && slices.Contains(names, e.Regarding.Name) {
			n++
		}
	}
	return n
}

// teardownCluster: the world's replicas stopped, `stratus teardown --yes`
// first refuses: the cloud says the cluster's load balancers changed
// minutes ago, by the replicas' provider, and its API server still holds
// LoadBalancer Services, so it exits 3 naming those signs of life and
// deletes nothing. With --force it deletes every load balancer the
// world's cluster owns, waits for the cloud, says so in JSON and exits 0;
// the other cluster's objects are untouched.
func teardownCluster(t *testing.T, w *world, leader *replica) *replica {
	ctx := w.ctx
	leader.kill(false)
	before, err := w.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: clusterName})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"teardown", "--cluster-name=" + clusterName, "--cloud-provider=localcloud", "--cloud-config=" + w.cloudCfg, "--yes", "--output=json"}
	refused := exec.CommandContext(ctx, filepath.Join(w.binDir, "stratus"), append(slices.Clone(args), "--kubeconfig="+w.kubeconfig)...)
	out, err := refused.Output()
	if refused.ProcessState == nil || refused.ProcessState.ExitCode() != teardown.ExitAlive {
		t.Fatalf("stratus teardown --yes of a live cluster: %v, want exit code %d\n%s", err, teardown.ExitAlive, out)
	}
	var alive teardown.Summary
	if err := json.Unmarshal(out, &alive); err != nil {
		t.Fatalf("teardown output %q: %v", out, err)
	}
	kinds := map[string]int{}
	for _, s := range alive.SignsOfLife {
		kinds[s.Kind]++
		if s.Kind == teardown.SignCloudChange && (!strings.HasPrefix(s.Object, teardown.KindLoadBalancer+" ") || !strings.HasPrefix(s.By, "stratus-localcloud-provider")) {
			t.Errorf("sign %+v: want a load balancer changed by the replicas' provider", s)
		}
	}
	if !alive.RefusedAlive || alive.Counts[teardown.StateDeleted] != 0 || kinds[teardown.SignCloudChange] == 0 || kinds[teardown.SignServices] != 1 {
		t.Fatalf("refused teardown: %+v; want signs of both the cloud and the Services, nothing deleted", alive)
	}
	if still, err := w.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: clusterName}); err != nil || len(still) != len(before) {
		t.Fatalf("after the refused teardown: %d load balancers (%v), want the %d there were", len(still), err, len(before))
	}
	cmd := exec.CommandContext(ctx, filepath.Join(w.binDir, "stratus"), append(args, "--force")...)
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("stratus teardown --force: %v\n%s", err, out)
	}
	var sum struct {
		Counts map[string]int `json:"counts"`
		Forced bool           `json:"forced"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("teardown output %q: %v", out, err)
	}
	if !sum.Forced {
		t.Errorf("teardown --force output %s: want it to say it went past the signs of life", out)
	}
	// The teardown waited until the provider no longer lists them; the
	// admin view still shows each as deleting until its deletion time.
	after, err := w.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: clusterName})
	if err != nil {
		t.Fatal(err)
	}
	for _, lb := range after {
		if lb.Status != api.LBDeleting {
			t.Errorf("load balancer %s (%s) of %s is %s after the teardown", lb.Name, lb.ID, clusterName, lb.Status)
		}
	}
	waitFor(ctx, t, "the deleted load balancers to leave the cloud", convergeTimeout, func(ctx context.Context) (bool, string) {
		lbs, err := w.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: clusterName})
		if err != nil {
			return false, err.Error()
		}
		return len(lbs) == 0, fmt.Sprintf("%d left", len(lbs))
	})
	if why := w.otherUntouched(ctx); why != "" {
		t.Error(why)
	}
	t.Logf("fault-safety scenario=teardown refused-signs=%v deleted=%d of %d other-cluster-touched=0 counts=%v",
		kinds, sum.Counts[teardown.StateDeleted], len(before), sum.Counts)
	return nil
}
