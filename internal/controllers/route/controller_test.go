package route

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func TestCreatesRoutesForRoutableNodes(t *testing.T) {
	t.Parallel()
	cloud := cloudfake.New()
	f := newFixture(t, cloud, Config{},
		node("a", "lc://a", "10.244.0.0/24", "fd00:10:244::/64"),
		node("b", "lc://b", "10.244.1.0/24"),
		node("no-provider-id", "", "10.244.2.0/24"),
		node("no-cidrs", "lc://c"),
	)
	f.mustSync()
	f.wantRoutes("10.244.0.0/24→a 10.244.1.0/24→b fd00:10:244::/64→a")
	if lists, _, _ := counts(cloud); lists != 1 {
		t.Errorf("ListRoutes calls = %d, want 1 per pass", lists)
	}
	if h4, h6 := hint(cloud, "10.244.0.0/24"), hint(cloud, "fd00:10:244::/64"); h4 != "uid-a" || h6 != "uid-a-1" {
		t.Errorf("name hints = %q, %q; want the UID, then the UID with the CIDR index", h4, h6)
	}
	f.wantCondition("a", corev1.ConditionFalse, ConditionRouteCreated)
	f.wantCondition("b", corev1.ConditionFalse, ConditionRouteCreated)
	if c := f.condition("no-provider-id"); c != nil {
		t.Errorf("node without providerID got a condition: %+v", c)
	}
	if got := testutil.ToFloat64(f.c.m.creates.WithLabelValues(kit.ResultSuccess)); got != 3 {
		t.Errorf("create success = %v, want 3", got)
	}
}

func TestSteadyStateCostsOneListAndNoWrites(t *testing.T) {
	t.Parallel()
	cloud := cloudfake.New()
	f := newFixture(t, cloud, Config{}, node("a", "lc://a", "10.244.0.0/24"))
	f.mustSync()
	patches := f.statusPatches.Load()
	f.mustSync()
	f.mustSync()
	lists, creates, deletes := counts(cloud)
	if lists != 3 || creates != 1 || deletes != 0 {
		t.Fatalf("lists/creates/deletes = %d/%d/%d, want 3/1/0", lists, creates, deletes)
	}
	if got := f.statusPatches.Load(); got != patches {
		t.Fatalf("unchanged condition patched again (%d → %d)", patches, got)
	}
}

func TestDeletesRoutesNoNodeAccountsFor(t *testing.T) {
	t.Parallel()
	cloud := cloudfake.New()
	for _, r := range []cloudprovider.Route{
		{Name: "gone", TargetNode: "gone", DestinationCIDR: "10.244.9.0/24"},
		{Name: "moved", TargetNode: "old", DestinationCIDR: "10.244.0.0/24"},
		{Name: "hole", TargetNode: "b", DestinationCIDR: "10.244.1.0/24", Blackhole: true},
		{Name: "foreign", TargetNode: "x", DestinationCIDR: "192.168.0.0/24"},
		{Name: "waiting", TargetNode: "c", DestinationCIDR: "10.244.2.0/24"},
	} {
		cloud.PutRoute(testCluster, r)
	}
	f := newFixture(t, cloud, Config{},
		node("a", "lc://a", "10.244.0.0/24"),
		node("b", "lc://b", "10.244.1.0/24"),
		node("c", "", "10.244.2.0/24"), // no providerID yet: its route stays
	)
	f.mustSync()
	// The route of a deleted node goes; a route to the wrong node and a
	// blackhole are replaced; a route outside the cluster CIDRs is not ours.
	f.wantRoutes("10.244.0.0/24→a 10.244.1.0/24→b 10.244.2.0/24→c 192.168.0.0/24→x")
	if got := testutil.ToFloat64(f.c.m.deletes.WithLabelValues(kit.ResultSuccess)); got != 3 {
		t.Errorf("delete success = %v, want 3", got)
	}
}

func TestFullRouteTableIsReportedWithoutRetryStorm(t *testing.T) {
	t.Parallel()
	cloud := cloudfake.New()
	cloud.RouteQuota = 2
	f := newFixture(t, cloud, Config{ReconcilePeriod: 10 * time.Second},
		node("a", "lc://a", "10.244.0.0/24"),
		node("b", "lc://b", "10.244.1.0/24"),
		node("c", "lc://c", "10.244.2.0/24"),
	)
	f.mustSync()
	_, creates, _ := counts(cloud)
	if creates != 3 {
		t.Fatalf("creates = %d, want 3 (two fit, one refused)", creates)
	}
	var full string
	for _, n := range []string{"a", "b", "c"} {
		if c := f.condition(n); c.Status == corev1.ConditionTrue {
			full = n
		}
	}
	if full == "" {
		t.Fatal("no node reports NetworkUnavailable=True")
	}
	f.wantCondition(full, corev1.ConditionTrue, ConditionNoRouteCreated)
	evs := f.events()
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+ReasonFailedToCreateRoute) || !strings.Contains(evs[0], "route table full") {
		t.Fatalf("events = %q, want one %s naming the quota", evs, ReasonFailedToCreateRoute)
	}
	if got, old := testutil.ToFloat64(f.c.m.quota), testutil.ToFloat64(f.c.m.quotaOld); got != 1 || old != 1 {
		t.Errorf("quota metric = %v, deprecated name = %v, want 1 under both names", got, old)
	}

	// Node events trigger passes at any rate; the refused route waits.
	for range 5 {
		f.mustSync()
	}
	if _, n, _ := counts(cloud); n != 3 {
		t.Fatalf("creates = %d after more passes, want still 3 (backoff)", n)
	}
	if evs := f.events(); len(evs) != 0 {
		t.Fatalf("events during backoff: %q", evs)
	}
	f.wantCondition(full, corev1.ConditionTrue, ConditionNoRouteCreated)

	// One period later it is tried once more, then the wait doubles.
	f.clk.Step(10 * time.Second)
	f.mustSync()
	f.clk.Step(10 * time.Second)
	f.mustSync()
	if _, n, _ := counts(cloud); n != 4 {
		t.Fatalf("creates = %d, want 4 (one retry after a period, none before 2 periods)", n)
	}

	// Deleting another node makes room: the waiting route goes in at once.
	other := "a"
	if full == "a" {
		other = "b"
	}
	if err := f.cl.Delete(f.ctx, node(other, "")); err != nil {
		t.Fatal(err)
	}
	f.mustSync()
	f.wantCondition(full, corev1.ConditionFalse, ConditionRouteCreated)
	if got := testutil.ToFloat64(f.c.m.backedOff); got != 0 {
		t.Errorf("backing-off gauge = %v, want 0", got)
	}
}

func TestCreationsRunInParallelWithABound(t *testing.T) {
	t.Parallel()
	cloud := cloudfake.New()
	release := cloud.Gate("CreateRoute")
	var nodes []*corev1.Node
	for i := range 40 {
		nodes = append(nodes, node(fmt.Sprintf("n%d", i), "lc://x", fmt.Sprintf("10.244.%d.0/24", i)))
	}
	f := newFixture(t, cloud, Config{Concurrency: 4}, nodes...)
	done := make(chan error, 1)
	go func() { _, err := f.c.sync(f.ctx, pass{}); done <- err }()
	// The creations block in the cloud until the gate opens: the pass
	// must have started exactly as many as the bound allows.
	if err := wait.PollUntilContextTimeout(f.ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cloud.MaxConcurrent("CreateRoute") >= 4, nil
	}); err != nil {
		t.Fatalf("creations in flight: %d, want 4: %v", cloud.MaxConcurrent("CreateRoute"), err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("sync: %v", err)
	}
	if m := cloud.MaxConcurrent("CreateRoute"); m != 4 {
		t.Fatalf("max concurrent CreateRoute = %d, want 4", m)
	}
	if _, n, _ := counts(cloud); n != 40 {
		t.Fatalf("creates = %d, want 40", n)
	}
}

func TestListFailureChangesNothing(t *testing.T) {
	t.Parallel()
	cloud := cloudfake.New()
	cloud.PutRoute(testCluster, cloudprovider.Route{Name: "x", TargetNode: "gone", DestinationCIDR: "10.244.9.0/24"})
	listErr := errors.New("cloud unavailable")
	cloud.SetError("ListRoutes", listErr)
	f := newFixture(t, cloud, Config{}, node("a", "lc://a", "10.244.0.0/24"))
	if _, err := f.c.sync(f.ctx, pass{}); err == nil || !errors.Is(err, listErr) {
		t.Fatalf("sync error = %v, want it to wrap the list error", err)
	}
	if _, creates, deletes := counts(cloud); creates+deletes != 0 {
		t.Fatalf("writes after a failed list: %d creates, %d deletes", creates, deletes)
	}
	if c := f.condition("a"); c != nil {
		t.Fatalf("condition set after a failed list: %+v", c)
	}
}

// Reconcile schedules the next pass a period later; a pass the cloud asked
// to retry later runs again after the delay it named, not as a failure;
// another failure goes to the queue's backoff.
func TestReconcileMapsOutcomes(t *testing.T) {
	t.Parallel()
	fr := cloudfake.New()
	f := newFixture(t, fr, Config{ReconcilePeriod: time.Minute}, node("a", "lc://a", "10.244.0.0/24"))
	res, err := f.c.Reconcile(f.ctx, pass{})
	if err != nil || res.RequeueAfter != time.Minute {
		t.Errorf("after a pass: %+v, %v; want the next one a period later", res, err)
	}
	fr.SetError("ListRoutes", fmt.Errorf("list: %w", cloudproviderapi.NewRetryError("table being updated", 7*time.Second)))
	res, err = f.c.Reconcile(f.ctx, pass{})
	if err != nil || res.RequeueAfter != 7*time.Second {
		t.Errorf("after a RetryError: %+v, %v; want a requeue after 7s and no error", res, err)
	}
	listErr := errors.New("cloud unavailable")
	fr.SetError("ListRoutes", listErr)
	if res, err = f.c.Reconcile(f.ctx, pass{}); !errors.Is(err, listErr) || res.RequeueAfter != 0 {
		t.Errorf("after a failure: %+v, %v; want the error, for the queue's backoff", res, err)
	}
}

func TestConditionKeepsTransitionTimeWhenOnlyReasonChanges(t *testing.T) {
	t.Parallel()
	cloud := cloudfake.New()
	n := node("a", "lc://a", "10.244.0.0/24")
	old := metav1.NewTime(time.Unix(1_600_000_000, 0))
	n.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "SomethingElse", LastTransitionTime: old},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"},
	}
	f := newFixture(t, cloud, Config{}, n)
	f.mustSync()
	c := f.wantCondition("a", corev1.ConditionFalse, ConditionRouteCreated)
	if !c.LastTransitionTime.Equal(&old) {
		t.Errorf("lastTransitionTime = %v, want %v kept", c.LastTransitionTime, old)
	}
	got := &corev1.Node{}
	if err := f.cl.Get(f.ctx, client.ObjectKey{Name: "a"}, got); err != nil || len(got.Status.Conditions) != 2 {
		t.Fatalf("other conditions lost: %v %+v", err, got.Status.Conditions)
	}
}

func TestRoutesMayChange(t *testing.T) {
	t.Parallel()
	base := node("a", "lc://a", "10.244.0.0/24")
	tests := []struct {
		name   string
		mutate func(*corev1.Node)
		want   bool
	}{
		{"labels only", func(n *corev1.Node) { n.Labels = map[string]string{"x": "y"} }, false},
		{"heartbeat", func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		}, false},
		{"pod CIDRs", func(n *corev1.Node) { n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, "fd00::/64") }, true},
		{"providerID", func(n *corev1.Node) { n.Spec.ProviderID = "lc://b" }, true},
		{"addresses", func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tt.mutate(cur)
			if got := routesMayChange(base, cur); got != tt.want {
				t.Errorf("routesMayChange = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewRequiresDepsAndClusterCIDRs(t *testing.T) {
	t.Parallel()
	rec := events.NewFakeRecorder(1)
	if _, err := New(Deps{Deps: kit.Deps{Recorder: rec}, Routes: cloudfake.New()}, Config{}); err == nil {
		t.Error("missing client accepted")
	}
	f := newFixture(t, cloudfake.New(), Config{})
	if _, err := New(Deps{Deps: kit.Deps{Client: f.cl, Recorder: rec}, Routes: cloudfake.New()}, Config{}); err == nil {
		t.Error("missing cluster CIDRs accepted")
	}
}
