package route

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// errQuota stands for a provider's quota error: its own cause, marked with
// cloud.ErrQuotaExceeded as every provider marks it.
var errQuota = fmt.Errorf("%w: QuotaExceeded (HTTP 403): quota routesPerCluster (2) exceeded", cloud.ErrQuotaExceeded)

// fakeRoutes is an in-memory route table of one cluster.
type fakeRoutes struct {
	mu       sync.Mutex
	table    map[string]*cloudprovider.Route // by destination CIDR
	quota    int
	failFor  map[string]error // CreateRoute error by destination CIDR
	listErr  error
	lists    int
	creates  []string // destination CIDRs, in call order
	deletes  []string
	hints    map[string]string // destination CIDR → name hint
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	// gate, when set, holds every CreateRoute until it is closed, so a
	// test can count the calls in flight.
	gate chan struct{}
}

func newFakeRoutes(routes ...*cloudprovider.Route) *fakeRoutes {
	f := &fakeRoutes{table: map[string]*cloudprovider.Route{}, failFor: map[string]error{}, hints: map[string]string{}, quota: 1000}
	for _, r := range routes {
		f.table[r.DestinationCIDR] = r
	}
	return f
}

func (f *fakeRoutes) ListRoutes(_ context.Context, cluster string) ([]*cloudprovider.Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listErr != nil {
		return nil, f.listErr
	}
	if cluster != "test" {
		return nil, fmt.Errorf("unexpected cluster %q", cluster)
	}
	out := make([]*cloudprovider.Route, 0, len(f.table))
	for _, r := range f.table {
		cp := *r
		out = append(out, &cp)
	}
	return out, nil
}

func (f *fakeRoutes) CreateRoute(_ context.Context, _ string, hint string, r *cloudprovider.Route) error {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates = append(f.creates, r.DestinationCIDR)
	if err := f.failFor[r.DestinationCIDR]; err != nil {
		return err
	}
	if _, dup := f.table[r.DestinationCIDR]; dup {
		return fmt.Errorf("route to %s exists", r.DestinationCIDR)
	}
	if len(f.table) >= f.quota {
		return fmt.Errorf("create route %s: %w", r.DestinationCIDR, errQuota)
	}
	for _, other := range f.table {
		if other.Name == "r-"+hint {
			return fmt.Errorf("route name %s taken", other.Name)
		}
	}
	f.hints[r.DestinationCIDR] = hint
	f.table[r.DestinationCIDR] = &cloudprovider.Route{Name: "r-" + hint, TargetNode: r.TargetNode, DestinationCIDR: r.DestinationCIDR}
	return nil
}

func (f *fakeRoutes) DeleteRoute(_ context.Context, _ string, r *cloudprovider.Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, r.DestinationCIDR)
	delete(f.table, r.DestinationCIDR)
	return nil
}

// snapshot returns "cidr→node" for every route, sorted.
func (f *fakeRoutes) snapshot() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for c, r := range f.table {
		s := c + "→" + string(r.TargetNode)
		if r.Blackhole {
			s += "(blackhole)"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func (f *fakeRoutes) counts() (lists, creates, deletes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists, len(f.creates), len(f.deletes)
}

type fixture struct {
	t             *testing.T
	ctx           context.Context
	c             *Controller
	cl            client.Client
	cloud         *fakeRoutes
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

func newFixture(t *testing.T, fr *fakeRoutes, cfg Config, nodes ...*corev1.Node) *fixture {
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
	cfg.ClusterName = "test"
	if cfg.ClusterCIDRs == nil {
		cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")}
	}

	c, err := New(Deps{Client: f.cl, Routes: fr, Recorder: f.rec, Registerer: prometheus.NewRegistry(), Clock: f.clk}, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.c = c
	return f
}

func (f *fixture) mustSync() {
	f.t.Helper()
	if err := f.c.sync(f.ctx, pass{}); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

func (f *fixture) wantRoutes(want string) {
	f.t.Helper()
	if got := f.cloud.snapshot(); got != want {
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
