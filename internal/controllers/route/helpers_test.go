package route

import (
	"context"
	"net/netip"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// testCluster is the cluster name the fixture gives the controller: the
// routes the tests put and read are in its table of the double.
const testCluster = "test"

// hint is the name hint the route to cidr was created with.
func hint(c *cloudfake.Cloud, cidr string) string {
	for _, r := range c.HeldRoutes(testCluster) {
		if r.DestinationCIDR == cidr {
			return strings.TrimPrefix(r.Name, "r-")
		}
	}
	return ""
}

// snapshot returns "cidr→node" for every route, sorted.
func snapshot(c *cloudfake.Cloud) string {
	var out []string
	for _, r := range c.HeldRoutes(testCluster) {
		s := r.DestinationCIDR + "→" + string(r.TargetNode)
		if r.Blackhole {
			s += "(blackhole)"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// counts is how many times the controller listed, created and deleted
// routes.
func counts(c *cloudfake.Cloud) (lists, creates, deletes int) {
	return c.CallCount("ListRoutes"), c.CallCount("CreateRoute"), c.CallCount("DeleteRoute")
}

type fixture struct {
	t             *testing.T
	ctx           context.Context
	c             *Controller
	cl            client.Client
	cloud         *cloudfake.Cloud
	rec           *events.FakeRecorder
	clk           *clocktesting.FakeClock
	statusPatches atomic.Int32
}

func node(name, providerID string, cidrs ...string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.NodeSpec{ProviderID: providerID, PodCIDRs: cidrs},
	}
}

func newFixture(t *testing.T, fr *cloudfake.Cloud, cfg Config, nodes ...*corev1.Node) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	f := &fixture{t: t, ctx: ctx, cloud: fr, rec: events.NewFakeRecorder(1000), clk: clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))}
	objs := make([]client.Object, len(nodes))
	for i, n := range nodes {
		objs[i] = n
	}
	f.cl = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).
		WithStatusSubresource(&corev1.Node{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			f.statusPatches.Add(1)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	cfg.ClusterName = testCluster
	if cfg.ClusterCIDRs == nil {
		cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")}
	}

	c, err := New(Deps{Deps: kit.Deps{Client: f.cl, Recorder: f.rec, Registerer: prometheus.NewRegistry(), Clock: f.clk}, Routes: fr}, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.c = c
	return f
}

func (f *fixture) mustSync() {
	f.t.Helper()
	if _, err := f.c.sync(f.ctx, pass{}); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

func (f *fixture) wantRoutes(want string) {
	f.t.Helper()
	if got := snapshot(f.cloud); got != want {
		f.t.Fatalf("routes:\n got %s\nwant %s", got, want)
	}
}

func (f *fixture) condition(name string) *corev1.NodeCondition {
	f.t.Helper()
	n := &corev1.Node{}
	if err := f.cl.Get(f.ctx, types.NamespacedName{Name: name}, n); err != nil {
		f.t.Fatal(err)
	}
	return condition(n)
}

func (f *fixture) wantCondition(name string, status corev1.ConditionStatus, reason string) *corev1.NodeCondition {
	f.t.Helper()
	c := f.condition(name)
	if c == nil || c.Status != status || c.Reason != reason {
		f.t.Fatalf("node %s NetworkUnavailable = %+v, want %s/%s", name, c, status, reason)
	}
	return c
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
