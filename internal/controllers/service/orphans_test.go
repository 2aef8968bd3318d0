package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
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
	live := lbService("ns", "live")
	recreated := lbService("ns", "recreated") // UID uid-recreated
	notLB := lbService("ns", "plain", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })
	h, now := orphanHarness(t, true, live, recreated, notLB)
	h.lister.lbs = []cloud.LoadBalancer{
		{Name: "lb-live", ServiceNamespace: "ns", ServiceName: "live", ServiceUID: "uid-live"},
		{Name: "lb-gone", ServiceNamespace: "ns", ServiceName: "gone", ServiceUID: "uid-gone"},
		{Name: "lb-old", ServiceNamespace: "ns", ServiceName: "recreated", ServiceUID: "uid-before"},
		{Name: "lb-plain", ServiceNamespace: "ns", ServiceName: "plain", ServiceUID: "uid-plain"},
		{Name: "lb-untagged"},
	}
	ctx := context.Background()
	if err := h.c.collectOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(h.c.metrics.orphans); got != 3 {
		t.Errorf("orphans = %v, want 3", got)
	}
	if n := h.lb.count("EnsureLoadBalancerDeleted"); n != 0 {
		t.Fatalf("deleted %d within the grace period", n)
	}
	*now = now.Add(2 * time.Minute)
	if err := h.c.collectOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range h.lb.calls {
		got[c] = true
	}
	for _, want := range []string{"EnsureLoadBalancerDeleted ns/gone", "EnsureLoadBalancerDeleted ns/recreated", "EnsureLoadBalancerDeleted ns/plain"} {
		if !got[want] {
			t.Errorf("missing %q in %v", want, h.lb.calls)
		}
	}
	if len(h.lb.calls) != 3 {
		t.Errorf("calls = %v; the live Service's load balancer must stay", h.lb.calls)
	}
}

func TestOrphansOnlyReportedWithoutDeleteFlag(t *testing.T) {
	h, now := orphanHarness(t, false)
	h.lister.lbs = []cloud.LoadBalancer{{Name: "lb-gone", ServiceNamespace: "ns", ServiceName: "gone", ServiceUID: "uid-gone"}}
	*now = now.Add(time.Hour)
	for range 2 {
		if err := h.c.collectOrphans(context.Background()); err != nil {
			t.Fatal(err)
		}
		*now = now.Add(time.Hour)
	}
	if len(h.lb.calls) != 0 {
		t.Errorf("calls = %v", h.lb.calls)
	}
	if got := testutil.ToFloat64(h.c.metrics.orphans); got != 1 {
		t.Errorf("orphans = %v", got)
	}
}

func TestOrphansFailedListChangesNothing(t *testing.T) {
	h, now := orphanHarness(t, true)
	h.lister.lbs = []cloud.LoadBalancer{{Name: "lb-gone", ServiceNamespace: "ns", ServiceName: "gone", ServiceUID: "uid-gone"}}
	if err := h.c.collectOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.lister.err = errors.New("cloud down")
	*now = now.Add(time.Hour)
	if err := h.c.collectOrphans(context.Background()); err == nil {
		t.Fatal("want the list error")
	}
	if len(h.lb.calls) != 0 {
		t.Errorf("calls = %v", h.lb.calls)
	}
	if got := testutil.ToFloat64(h.c.metrics.orphans); got != 1 {
		t.Errorf("orphans gauge = %v, want the last complete answer (1)", got)
	}
}

// An orphan whose Service comes back before the grace ends is kept.
func TestOrphanRevivedIsKept(t *testing.T) {
	h, now := orphanHarness(t, true)
	h.lister.lbs = []cloud.LoadBalancer{{Name: "lb-web", ServiceNamespace: "ns", ServiceName: "web", ServiceUID: "uid-web"}}
	if err := h.c.collectOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.create(lbService("ns", "web"))
	*now = now.Add(time.Hour)
	if err := h.c.collectOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(h.lb.calls) != 0 {
		t.Errorf("calls = %v", h.lb.calls)
	}
}
