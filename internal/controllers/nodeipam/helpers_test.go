package nodeipam

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
)

type fixture struct {
	t   *testing.T
	ctx context.Context
	c   *Controller
	cl  client.Client
	rec *events.FakeRecorder
	reg *prometheus.Registry
}

func prefixes(t testing.TB, s ...string) []netip.Prefix {
	t.Helper()
	out := make([]netip.Prefix, len(s))
	for i, v := range s {
		out[i] = netip.MustParsePrefix(v)
	}
	return out
}

func node(name string, cidrs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	if len(cidrs) > 0 {
		n.Spec.PodCIDR = cidrs[0]
		n.Spec.PodCIDRs = cidrs
	}
	return n
}

func newFixture(t *testing.T, cfg Config, funcs *interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	f := &fixture{t: t, ctx: ctx, cl: b.Build(), rec: events.NewFakeRecorder(100), reg: prometheus.NewRegistry()}
	c, err := New(Deps{Deps: kit.Deps{Client: f.cl, Recorder: f.rec, Registerer: f.reg}}, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.c = c
	return f
}

func (f *fixture) get(name string) *corev1.Node {
	f.t.Helper()
	n := &corev1.Node{}
	if err := f.cl.Get(f.ctx, types.NamespacedName{Name: name}, n); err != nil {
		f.t.Fatalf("get node %s: %v", name, err)
	}
	return n
}

func (f *fixture) mustSync(name string) {
	f.t.Helper()
	if err := f.c.sync(f.ctx, name); err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
}

func (f *fixture) wantPodCIDRs(name string, want ...string) {
	f.t.Helper()
	n := f.get(name)
	if strings.Join(n.Spec.PodCIDRs, ",") != strings.Join(want, ",") {
		f.t.Fatalf("node %s podCIDRs = %v, want %v", name, n.Spec.PodCIDRs, want)
	}
	wantSingle := ""
	if len(want) > 0 {
		wantSingle = want[0]
	}
	if n.Spec.PodCIDR != wantSingle {
		f.t.Fatalf("node %s podCIDR = %q, want %q", name, n.Spec.PodCIDR, wantSingle)
	}
}

// events drains the recorded events.
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

func (f *fixture) wantEvent(prefix string) {
	f.t.Helper()
	evs := f.events()
	for _, e := range evs {
		if strings.HasPrefix(e, prefix) {
			return
		}
	}
	f.t.Fatalf("no event starting with %q among %q", prefix, evs)
}

func (f *fixture) gauge(g *prometheus.GaugeVec, family string) float64 {
	return testutil.ToFloat64(g.WithLabelValues(family))
}

func updateEvent(old, cur *corev1.Node) event.TypedUpdateEvent[*corev1.Node] {
	return event.TypedUpdateEvent[*corev1.Node]{ObjectOld: old, ObjectNew: cur}
}

// owner returns the node holding p.
func (a *allocator) owner(p netip.Prefix) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.owners[p.Masked()]
}
