package route

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/ownership"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// notFoundFor makes the cloud refuse the route to cidr as localcloud
// refuses a Node it has no instance for.
func notFoundFor(c *cloudfake.Cloud, cidr, node string) {
	c.SetErrorFor("CreateRoute", cidr, fmt.Errorf("localcloud: create route for %s: %w", node, cloudprovider.InstanceNotFound))
}

func mustPolicy(t *testing.T, platforms ...string) ownership.Policy {
	t.Helper()
	pol, err := ownership.New(platforms, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// setCondition writes n's NetworkUnavailable as another writer would.
func (f *fixture) setCondition(name string, status corev1.ConditionStatus, reason, msg string) {
	f.t.Helper()
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: corev1.NodeNetworkUnavailable, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(f.clk.Now()),
	}}}})
	if err != nil {
		f.t.Fatal(err)
	}
	target := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := f.cl.Status().Patch(f.ctx, target, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		f.t.Fatal(err)
	}
}

func wantAll(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s %q does not say %q", what, got, w)
		}
	}
}

// TestInstanceNotFoundNamesTheNode: without an ownership policy every
// Node is routed as this cloud's, and a Node of another platform draws
// the cloud's "instance not found". The condition and the event say which
// Node and providerID the cloud does not know, and that no platform list
// is set; under a policy, an owned Node the cloud does not know says its
// providerID and the platforms routed.
func TestInstanceNotFoundNamesTheNode(t *testing.T) {
	t.Parallel()
	cloud := cloudfake.New()
	notFoundFor(cloud, "10.244.1.0/24", "onprem")
	f := newFixture(t, cloud, Config{}, node("a", "lc://a", "10.244.0.0/24"), node("onprem", "onprem://rack1/onprem", "10.244.1.0/24"))
	f.mustSync()
	c := f.wantCondition("onprem", corev1.ConditionTrue, ConditionNoRouteCreated)
	wantAll(t, "condition message", c.Message, "instance not found", "Node onprem", `"onprem://rack1/onprem"`, "--cloud-provider-platforms")
	wantAll(t, "events", strings.Join(f.events(), "\n"), ReasonFailedToCreateRoute, `"onprem://rack1/onprem"`, "--cloud-provider-platforms")

	cloud = cloudfake.New()
	notFoundFor(cloud, "10.244.0.0/24", "a")
	f = newFixture(t, cloud, Config{}, node("a", "lc://a", "10.244.0.0/24"))
	f.c.ownership = mustPolicy(t, "lc", "lc2")
	f.mustSync()
	c = f.wantCondition("a", corev1.ConditionTrue, ConditionNoRouteCreated)
	wantAll(t, "condition message", c.Message, "instance not found", `"lc://a"`, "lc,lc2")

	// Any other error is the cloud's own text, unchanged.
	cloud = cloudfake.New()
	cloud.SetErrorFor("CreateRoute", "10.244.0.0/24", fmt.Errorf("table is read-only"))
	f = newFixture(t, cloud, Config{}, node("a", "lc://a", "10.244.0.0/24"))
	f.mustSync()
	if c := f.wantCondition("a", corev1.ConditionTrue, ConditionNoRouteCreated); c.Message != msgCreateFailed+"10.244.0.0/24: fake CreateRoute 10.244.0.0/24: table is read-only" {
		t.Errorf("message %q", c.Message)
	}
}

// TestForeignNodeLosesTheConditionThisControllerWrote: a Node routed
// before --cloud-provider-platforms was set carries the NoRouteCreated
// condition this controller wrote ("instance not found"). Once the policy
// makes it foreign, the next pass removes that condition (leaving the
// kubelet's) with an event saying why, and the owned Node keeps its own.
// The removal happens once, when the Node becomes foreign: a
// Stratus-worded condition written later (by the controller manager that
// routes that platform) stays, as does another controller's wording of
// the same reasons on another foreign Node.
func TestForeignNodeLosesTheConditionThisControllerWrote(t *testing.T) {
	t.Parallel()
	cloud := cloudfake.New()
	notFoundFor(cloud, "10.244.1.0/24", "onprem")
	onprem := node("onprem", "onprem://rack1/onprem", "10.244.1.0/24")
	onprem.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	upstream := node("upstream", "edge://u", "10.244.2.0/24")
	upstream.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: ConditionRouteCreated, Message: "RouteController created a route"}}
	f := newFixture(t, cloud, Config{}, node("a", "lc://a", "10.244.0.0/24"), onprem, upstream)
	// Before the flag: every Node is routed as this cloud's.
	cloud.SetErrorFor("CreateRoute", "10.244.2.0/24", fmt.Errorf("not here"))
	f.mustSync()
	f.wantCondition("onprem", corev1.ConditionTrue, ConditionNoRouteCreated)
	// Another platform's upstream-based controller owns upstream's condition.
	f.setCondition("upstream", corev1.ConditionFalse, ConditionRouteCreated, "RouteController created a route")
	f.events()

	f.c.ownership = mustPolicy(t, "lc")
	f.mustSync()
	if c := f.condition("onprem"); c != nil {
		t.Fatalf("foreign node keeps the condition this controller wrote: %+v", c)
	}
	n := &corev1.Node{}
	if err := f.cl.Get(f.ctx, client.ObjectKey{Name: "onprem"}, n); err != nil {
		t.Fatal(err)
	}
	if len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Type != corev1.NodeReady {
		t.Errorf("the kubelet's conditions became %+v", n.Status.Conditions)
	}
	ev := strings.Join(f.events(), "\n")
	wantAll(t, "events", ev, "Normal "+ReasonRemovedNetworkUnavailable, "NetworkUnavailable=True (NoRouteCreated)",
		`"onprem://rack1/onprem"`, `platform "onprem"`, "routes platforms lc only")
	if strings.Count(ev, ReasonRemovedNetworkUnavailable) != 1 {
		t.Errorf("want one removal event: %s", ev)
	}
	f.wantCondition("a", corev1.ConditionFalse, ConditionRouteCreated)
	f.wantCondition("upstream", corev1.ConditionFalse, ConditionRouteCreated)

	// The controller manager that routes onprem writes its condition:
	// it stays, pass after pass.
	f.setCondition("onprem", corev1.ConditionFalse, ConditionRouteCreated, msgRoutesExist+"10.244.1.0/24")
	patches := f.statusPatches.Load()
	f.mustSync()
	f.mustSync()
	f.wantCondition("onprem", corev1.ConditionFalse, ConditionRouteCreated)
	if got := f.statusPatches.Load(); got != patches {
		t.Errorf("%d status patches after the Node was handled, want none", got-patches)
	}

	// A Node that becomes foreign again (it was owned, then deleted and
	// registered anew) is looked at anew.
	if err := f.cl.Delete(f.ctx, n); err != nil {
		t.Fatal(err)
	}
	f.mustSync()
	again := node("onprem", "onprem://rack1/onprem", "10.244.1.0/24")
	again.UID = "uid-onprem-2"
	again.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: ConditionNoRouteCreated, Message: fmt.Sprintf(msgBackingOffFmt, 1)}}
	if err := f.cl.Create(f.ctx, again); err != nil {
		t.Fatal(err)
	}
	f.mustSync()
	if c := f.condition("onprem"); c != nil {
		t.Errorf("re-registered foreign node keeps the condition this controller wrote: %+v", c)
	}
}

// TestForeignConditionRemovalRetried: a removal the API server refuses
// fails the pass and is tried again by the next one.
func TestForeignConditionRemovalRetried(t *testing.T) {
	t.Parallel()
	onprem := node("onprem", "onprem://x", "10.244.1.0/24")
	onprem.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: ConditionNoRouteCreated, Message: msgCreateFailed + "10.244.1.0/24: instance not found"}}
	f := newFixture(t, cloudfake.New(), Config{}, onprem)
	f.c.ownership = mustPolicy(t, "lc")
	failing := f.c.client
	f.c.client = refusingStatus{Client: failing}
	if _, err := f.c.sync(f.ctx, pass{}); err == nil || !strings.Contains(err.Error(), "remove NetworkUnavailable") {
		t.Fatalf("sync: err = %v, want the removal's failure", err)
	}
	f.wantCondition("onprem", corev1.ConditionTrue, ConditionNoRouteCreated)
	f.c.client = failing
	f.mustSync()
	if c := f.condition("onprem"); c != nil {
		t.Errorf("condition kept after the retry: %+v", c)
	}
}

// refusingStatus is a client whose status writes fail.
type refusingStatus struct{ client.Client }

func (r refusingStatus) Status() client.SubResourceWriter { return refusingWriter{r.Client.Status()} }

type refusingWriter struct{ client.SubResourceWriter }

func (refusingWriter) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return fmt.Errorf("the API server is unavailable")
}

// TestExplainSaysWhyAForeignNodeIsNotRouted: explain names what makes the
// Node another platform's, its providerID or its annotation, and the
// platforms routed here.
func TestExplainSaysWhyAForeignNodeIsNotRouted(t *testing.T) {
	t.Parallel()
	edge := node("edge", "", "10.244.2.0/24")
	edge.Annotations = map[string]string{ownership.AnnotationPlatform: "edge"}
	f := newFixture(t, cloudfake.New(), Config{}, node("onprem", "onprem://rack1/onprem", "10.244.1.0/24"), edge, node("odd", "no-platform", "10.244.3.0/24"))
	store := explain.NewStore()
	c, err := New(Deps{Deps: kit.Deps{Client: f.cl, Clock: f.clk, Explain: store, Ownership: mustPolicy(t, "lc")}, Routes: f.cloud},
		Config{ClusterName: testCluster, ClusterCIDRs: f.c.cfg.ClusterCIDRs, ReconcilePeriod: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.sync(f.ctx, pass{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"onprem": {`spec.providerID "onprem://rack1/onprem" is of platform "onprem"`, "routes platforms lc only"},
		"edge":   {ownership.AnnotationPlatform + ` is "edge"`, "routes platforms lc only"},
		"odd":    {`spec.providerID "no-platform" names no platform`},
	} {
		_, lines := explained(f, store, name)
		wantAll(t, name+"'s explanation", lines, append(want, "not routed here")...)
	}
}
