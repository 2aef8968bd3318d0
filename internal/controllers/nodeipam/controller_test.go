package nodeipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam/cidrset"
)

func dualStack(t *testing.T) Config {
	return Config{ClusterCIDRs: prefixes(t, "10.244.0.0/16", "fd00:10:244::/56"), MaskSizes: []int{24, 64}}
}

func TestAllocateDualStack(t *testing.T) {
	f := newFixture(t, dualStack(t), nil, node("a"), node("b"))
	f.mustSync("a")
	f.mustSync("b")
	f.wantPodCIDRs("a", "10.244.0.0/24", "fd00:10:244::/64")
	f.wantPodCIDRs("b", "10.244.1.0/24", "fd00:10:244:1::/64")
	if got := f.gauge(f.c.m.allocated, familyIPv4); got != 2 {
		t.Errorf("allocated ipv4 = %v, want 2", got)
	}
	if got := f.gauge(f.c.m.available, familyIPv6); got != 254 {
		t.Errorf("available ipv6 = %v, want 254", got)
	}
}

func TestAllocateOrderFollowsClusterCIDRFlag(t *testing.T) {
	cfg := Config{ClusterCIDRs: prefixes(t, "fd00::/120", "10.0.0.0/24"), MaskSizes: []int{124, 28}}
	f := newFixture(t, cfg, nil, node("a"))
	f.mustSync("a")
	f.wantPodCIDRs("a", "fd00::/124", "10.0.0.0/28")
}

func TestExistingCIDRsAreLearnedBeforeAllocating(t *testing.T) {
	// Two /24s in the cluster; a node from an earlier leader holds the
	// first. The new node must get the second, whatever order syncs run.
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/23"), MaskSizes: []int{24}}
	f := newFixture(t, cfg, nil, node("old", "10.0.0.0/24"), node("new"))
	f.mustSync("new")
	f.wantPodCIDRs("new", "10.0.1.0/24")
	f.wantPodCIDRs("old", "10.0.0.0/24")
}

func TestServiceRangeIsNeverHandedOut(t *testing.T) {
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/22"), MaskSizes: []int{24}, ServiceCIDRs: prefixes(t, "10.0.0.0/24", "10.0.2.0/23", "fd00::/108")}
	f := newFixture(t, cfg, nil, node("a"), node("b"))
	f.mustSync("a")
	f.wantPodCIDRs("a", "10.0.1.0/24")
	err := f.c.sync(f.ctx, "b")
	if !errors.Is(err, cidrset.ErrCIDRRangeNoCIDRsRemaining) {
		t.Fatalf("second node: want exhaustion, got %v", err)
	}
	if got := f.gauge(f.c.m.allocated, familyIPv4); got != 1 {
		t.Errorf("allocated = %v, want 1 (reserved ranges are not allocations)", got)
	}
}

func TestExhaustionReportsAndRecoversOnRelease(t *testing.T) {
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/24"), MaskSizes: []int{24}}
	f := newFixture(t, cfg, nil, node("a", "10.0.0.0/24"), node("b"))
	err := f.c.sync(f.ctx, "b")
	if !errors.Is(err, cidrset.ErrCIDRRangeNoCIDRsRemaining) {
		t.Fatalf("want exhaustion, got %v", err)
	}
	f.wantEvent("Warning " + ReasonCIDRNotAvailable)
	f.wantPodCIDRs("b")
	if got := testutil.ToFloat64(f.c.m.failures.WithLabelValues(failureExhausted)); got != 1 {
		t.Errorf("failures{exhausted} = %v, want 1", got)
	}
	if err := f.cl.Delete(f.ctx, node("a")); err != nil {
		t.Fatal(err)
	}
	f.mustSync("a")
	f.mustSync("b")
	f.wantPodCIDRs("b", "10.0.0.0/24")
}

func TestDualStackExhaustionOfOneFamilyTakesNothing(t *testing.T) {
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/16", "fd00::/64"), MaskSizes: []int{24, 64}}
	f := newFixture(t, cfg, nil, node("a", "10.0.0.0/24", "fd00::/64"), node("b"))
	if err := f.c.learnExisting(f.ctx); err != nil {
		t.Fatal(err)
	}
	before := f.gauge(f.c.m.available, familyIPv4)
	if err := f.c.sync(f.ctx, "b"); !errors.Is(err, cidrset.ErrCIDRRangeNoCIDRsRemaining) {
		t.Fatalf("want exhaustion, got %v", err)
	}
	if after := f.gauge(f.c.m.available, familyIPv4); after != before {
		t.Fatalf("ipv4 available went from %v to %v: a half allocation leaked", before, after)
	}
}

func TestNodeCIDROutsideClusterIsReportedOnce(t *testing.T) {
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/16"), MaskSizes: []int{24}}
	f := newFixture(t, cfg, nil, node("stray", "192.168.0.0/24", "fd00::/64"), node("ok"))
	f.mustSync("stray")
	evs := f.events()
	if len(evs) != 2 || !strings.HasPrefix(evs[0], "Warning "+ReasonPodCIDROutsideCluster) || !strings.Contains(evs[0], "192.168.0.0/24") {
		t.Fatalf("events = %q, want two %s warnings naming the CIDRs", evs, ReasonPodCIDROutsideCluster)
	}
	f.mustSync("stray")
	if evs := f.events(); len(evs) != 0 {
		t.Fatalf("unchanged node reported again: %q", evs)
	}
	if got := testutil.ToFloat64(f.c.m.outside); got != 2 {
		t.Errorf("outside metric = %v, want 2", got)
	}
	f.mustSync("ok")
	f.wantPodCIDRs("ok", "10.0.0.0/24")
}

func TestCollisionIsReportedAndSurvivesRelease(t *testing.T) {
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/23"), MaskSizes: []int{24}}
	f := newFixture(t, cfg, nil, node("a", "10.0.0.0/24"), node("b", "10.0.0.0/24"), node("c"))
	f.mustSync("b")
	f.wantEvent("Warning " + ReasonPodCIDRCollision)
	// Deleting the duplicate must not free the CIDR the other node holds.
	if err := f.cl.Delete(f.ctx, node("b")); err != nil {
		t.Fatal(err)
	}
	f.mustSync("b")
	f.mustSync("c")
	f.wantPodCIDRs("c", "10.0.1.0/24")
}

func TestRejectedPatchReturnsTheCIDRs(t *testing.T) {
	reject := true
	funcs := &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		if reject {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, obj.GetName(),
				field.ErrorList{field.Forbidden(field.NewPath("spec", "podCIDRs"), "may not change")})
		}
		return c.Patch(ctx, obj, p, opts...)
	}}
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/16"), MaskSizes: []int{24}}
	f := newFixture(t, cfg, funcs, node("a"))
	if err := f.c.sync(f.ctx, "a"); err == nil {
		t.Fatal("want the patch error")
	}
	f.wantEvent("Warning " + ReasonCIDRAssignmentFailed)
	if o := f.c.alloc.owner(netip.MustParsePrefix("10.0.0.0/24")); o != "" {
		t.Fatalf("rejected CIDR still held by %q", o)
	}
	reject = false
	f.mustSync("a")
	f.wantPodCIDRs("a", "10.0.1.0/24") // the rotating allocator moves on
}

func TestUnknownPatchOutcomeRetriesTheSameCIDRs(t *testing.T) {
	fail := true
	funcs := &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		if fail {
			return apierrors.NewServerTimeout(schema.GroupResource{Resource: "nodes"}, "patch", 1)
		}
		return c.Patch(ctx, obj, p, opts...)
	}}
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/16"), MaskSizes: []int{24}}
	f := newFixture(t, cfg, funcs, node("a"))
	if err := f.c.sync(f.ctx, "a"); err == nil {
		t.Fatal("want the patch error")
	}
	fail = false
	f.mustSync("a")
	f.wantPodCIDRs("a", "10.0.0.0/24")
	if got := f.gauge(f.c.m.allocated, familyIPv4); got != 1 {
		t.Fatalf("allocated = %v, want 1: the retry took a second CIDR", got)
	}
}

func TestRecreatedNodeGetsFreshAllocation(t *testing.T) {
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/23"), MaskSizes: []int{24}}
	f := newFixture(t, cfg, nil, node("a"))
	f.mustSync("a")
	f.wantPodCIDRs("a", "10.0.0.0/24")
	// The cache saw only the final state: same name, new UID, no CIDRs.
	if err := f.cl.Delete(f.ctx, node("a")); err != nil {
		t.Fatal(err)
	}
	n := node("a")
	n.UID = "uid-a-2"
	if err := f.cl.Create(f.ctx, n); err != nil {
		t.Fatal(err)
	}
	f.mustSync("a")
	f.wantPodCIDRs("a", "10.0.1.0/24")
	if got := f.gauge(f.c.m.allocated, familyIPv4); got != 1 {
		t.Fatalf("allocated = %v, want 1: the old incarnation's CIDR leaked", got)
	}
}

func TestConcurrentWorkersNeverShareACIDR(t *testing.T) {
	const nodes = 300
	var objs []client.Object
	for i := range nodes {
		objs = append(objs, node(fmt.Sprintf("n%03d", i)))
	}
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/15", "fd00::/48"), MaskSizes: []int{24, 64}}
	f := newFixture(t, cfg, nil, objs...)
	var wg sync.WaitGroup
	errs := make(chan error, nodes)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < nodes; i += 16 {
				if err := f.c.sync(f.ctx, fmt.Sprintf("n%03d", i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var list corev1.NodeList
	if err := f.cl.List(f.ctx, &list); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, n := range list.Items {
		if len(n.Spec.PodCIDRs) != 2 {
			t.Fatalf("node %s podCIDRs = %v", n.Name, n.Spec.PodCIDRs)
		}
		for _, c := range n.Spec.PodCIDRs {
			if other, dup := seen[c]; dup {
				t.Fatalf("%s given to %s and %s", c, other, n.Name)
			}
			seen[c] = n.Name
		}
	}
}

func TestDeletingNodeIsLeftAlone(t *testing.T) {
	n := node("a")
	n.Finalizers = []string{"example.com/hold"}
	cfg := Config{ClusterCIDRs: prefixes(t, "10.0.0.0/16"), MaskSizes: []int{24}}
	f := newFixture(t, cfg, nil, n)
	if err := f.cl.Delete(f.ctx, node("a")); err != nil {
		t.Fatal(err)
	}
	f.mustSync("a")
	f.wantPodCIDRs("a")
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr error
		wantMsg string
	}{
		{name: "no cluster CIDR", cfg: Config{}, wantMsg: "want one or two"},
		{name: "same family twice", cfg: Config{ClusterCIDRs: prefixes(t, "10.0.0.0/16", "10.1.0.0/16"), MaskSizes: []int{24, 24}}, wantMsg: "same IP family"},
		{name: "mask sizes mismatch", cfg: Config{ClusterCIDRs: prefixes(t, "10.0.0.0/16"), MaskSizes: []int{24, 64}}, wantMsg: "mask sizes"},
		{name: "mask too small", cfg: Config{ClusterCIDRs: prefixes(t, "10.0.0.0/16"), MaskSizes: []int{8}}, wantErr: cidrset.ErrInvalidMaskSize},
		{
			name:    "service range covers the cluster",
			cfg:     Config{ClusterCIDRs: prefixes(t, "10.0.0.0/16"), MaskSizes: []int{24}, ServiceCIDRs: prefixes(t, "10.0.0.0/8")},
			wantErr: ErrOverlap, wantMsg: "10.0.0.0/8",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, dualStack(t), nil)
			_, err := New(Deps{Deps: kit.Deps{Client: f.cl, Recorder: f.rec}}, tt.cfg)
			if err == nil {
				t.Fatal("want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not mention %q", err, tt.wantMsg)
			}
		})
	}
}

func TestPredicateSkipsUnrelatedUpdates(t *testing.T) {
	p := nodePredicate()
	withCIDR := node("a", "10.0.0.0/24")
	relabelled := withCIDR.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	if p.Update(updateEvent(withCIDR, relabelled)) {
		t.Error("label change on a node with CIDRs should not sync")
	}
	if !p.Update(updateEvent(node("a"), node("a"))) {
		t.Error("a node still without CIDRs should sync on resync")
	}
	recreated := withCIDR.DeepCopy()
	recreated.UID = types.UID("other")
	if !p.Update(updateEvent(withCIDR, recreated)) {
		t.Error("a new UID should sync")
	}
}
