package service

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func orphanHarness(t *testing.T, deleteOrphans bool, objs ...*corev1.Service) (*harness, *time.Time) {
	t.Helper()
	h := newHarness(t, Config{DeleteOrphans: deleteOrphans, OrphanGrace: time.Minute})
	for _, s := range objs {
		h.create(s)
	}
	now := time.Unix(1000, 0)
	h.c.now = func() time.Time { return now }
	return h, &now
}

func TestOrphansDeletedAfterGrace(t *testing.T) {
	t.Parallel()
	live := lbService("ns", "live")
	recreated := lbService("ns", "recreated") // UID uid-recreated
	notLB := lbService("ns", "plain", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })
	h, now := orphanHarness(t, true, live, recreated, notLB)
	h.putBalancers(
		cloudfake.Balancer{Service: nn("ns/live"), UID: "uid-live"},
		cloudfake.Balancer{Service: nn("ns/gone"), UID: "uid-gone"},
		cloudfake.Balancer{Service: nn("ns/recreated"), UID: "uid-before"},
		cloudfake.Balancer{Service: nn("ns/plain"), UID: "uid-plain"},
		cloudfake.Balancer{Name: "lb-untagged"},
	)
	ctx := context.Background()
	if err := h.c.collectOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(h.c.metrics.orphans); got != 3 {
		t.Errorf("orphans = %v, want 3", got)
	}
	if n := h.count("EnsureLoadBalancerDeleted"); n != 0 {
		t.Fatalf("deleted %d within the grace period", n)
	}
	*now = now.Add(2 * time.Minute)
	if err := h.c.collectOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range h.calls() {
		got[c] = true
	}
	for _, want := range []string{"EnsureLoadBalancerDeleted ns/gone", "EnsureLoadBalancerDeleted ns/recreated", "EnsureLoadBalancerDeleted ns/plain"} {
		if !got[want] {
			t.Errorf("missing %q in %v", want, h.calls())
		}
	}
	if len(h.calls()) != 3 {
		t.Errorf("calls = %v; the live Service's load balancer must stay", h.calls())
	}
	var left []string
	for _, b := range h.lb.Balancers() {
		left = append(left, b.Service.String())
	}
	if !slices.Equal(left, []string{"ns/live", "/"}) {
		t.Errorf("the cloud holds load balancers of %q, want the live Service's and the untagged one", left)
	}
}

// putBalancers puts load balancers in the harness' cluster, as earlier
// runs left them.
func (h *harness) putBalancers(bs ...cloudfake.Balancer) {
	for _, b := range bs {
		b.Cluster = h.cluster
		h.lb.PutBalancer(b)
	}
}

func TestOrphansOnlyReportedWithoutDeleteFlag(t *testing.T) {
	t.Parallel()
	h, now := orphanHarness(t, false)
	h.putBalancers(cloudfake.Balancer{Service: nn("ns/gone"), UID: "uid-gone"})
	*now = now.Add(time.Hour)
	for range 2 {
		if err := h.c.collectOrphans(context.Background()); err != nil {
			t.Fatal(err)
		}
		*now = now.Add(time.Hour)
	}
	if len(h.calls()) != 0 {
		t.Errorf("calls = %v", h.calls())
	}
	if got := testutil.ToFloat64(h.c.metrics.orphans); got != 1 {
		t.Errorf("orphans = %v", got)
	}
}

func TestOrphansFailedListChangesNothing(t *testing.T) {
	t.Parallel()
	h, now := orphanHarness(t, true)
	h.putBalancers(cloudfake.Balancer{Service: nn("ns/gone"), UID: "uid-gone"})
	if err := h.c.collectOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.lb.SetError("ListLoadBalancers", errors.New("cloud down"))
	*now = now.Add(time.Hour)
	if err := h.c.collectOrphans(context.Background()); err == nil {
		t.Fatal("want the list error")
	}
	if len(h.calls()) != 0 {
		t.Errorf("calls = %v", h.calls())
	}
	if got := testutil.ToFloat64(h.c.metrics.orphans); got != 1 {
		t.Errorf("orphans gauge = %v, want the last complete answer (1)", got)
	}
}

// An orphan whose Service comes back before the grace ends is kept.
func TestOrphanRevivedIsKept(t *testing.T) {
	t.Parallel()
	h, now := orphanHarness(t, true)
	h.putBalancers(cloudfake.Balancer{Service: nn("ns/web"), UID: "uid-web"})
	if err := h.c.collectOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.create(lbService("ns", "web"))
	*now = now.Add(time.Hour)
	if err := h.c.collectOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(h.calls()) != 0 {
		t.Errorf("calls = %v", h.calls())
	}
}
