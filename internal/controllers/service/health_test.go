package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestLoadBalancerPhaseGauge: each Service counts once, in the state its
// last sync left it (a RetryError before the first ingress is pending, an
// error failing, success serving), and leaves the gauge when it is gone.
func TestLoadBalancerPhaseGauge(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "a"), lbService("ns", "b"), node("n1"))
	ctx := context.Background()
	a, b := key{Service: nn("ns/a")}, key{Service: nn("ns/b")}
	reconcile := func(k key) {
		t.Helper()
		_, _ = h.c.Reconcile(ctx, k)
	}
	wantPhases(t, h.reg, 0, 0, 0)

	h.lb.FailNext("EnsureLoadBalancer", errors.New("quota exceeded"))
	reconcile(a)
	wantPhases(t, h.reg, 0, 1, 0)

	h.lb.FailNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("provisioning", time.Second))
	reconcile(b)
	wantPhases(t, h.reg, 1, 1, 0)

	reconcile(a)
	wantPhases(t, h.reg, 1, 0, 1)
	reconcile(a) // nothing changed: still one serving
	wantPhases(t, h.reg, 1, 0, 1)

	// A deleted Service leaves the gauge once its deletion is synced.
	if err := h.cl.Delete(ctx, h.service("ns", "b")); err != nil {
		t.Fatal(err)
	}
	reconcile(b)
	wantPhases(t, h.reg, 0, 0, 1)

	// A Service that stops wanting a load balancer leaves the gauge once
	// its load balancer is deleted.
	svc := h.service("ns", "a")
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	h.update(svc)
	reconcile(a)
	wantPhases(t, h.reg, 0, 0, 0)
}

func wantPhases(t *testing.T, g prometheus.Gatherer, pending, failing, serving float64) {
	t.Helper()
	want := map[string]float64{string(phasePending): pending, string(phaseFailing): failing, string(phaseServing): serving}
	got := map[string]float64{}
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != MetricLoadBalancers {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" {
					got[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	for state, w := range want {
		if v, ok := got[state]; !ok || v != w {
			t.Errorf("%s{state=%q} = %v (exported: %v), want %v", MetricLoadBalancers, state, v, ok, w)
		}
	}
}

// TestNodeSyncLatency: a load balancer's hosts update observes the time
// since the first node change that altered the eligible set, not since a
// later change that left the set as it was.
func TestNodeSyncLatency(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "a"), node("n1"))
	h.mustSync("ns/a")
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC))
	h.c.now, h.c.nodes.now = clk.Now, clk.Now

	h.c.nodes.upsert(node("n2"))
	clk.Step(2 * time.Second)
	h.c.nodes.upsert(node("n2")) // same identity: not a change
	clk.Step(time.Second)
	h.mustSync("ns/a")
	wantLatency(t, h.reg, 1, 3)

	h.c.nodes.remove("n2")
	clk.Step(time.Second)
	h.c.nodes.snapshot()
	clk.Step(time.Second)
	// A node that is no backend joins: the set is unchanged, the update
	// still owed dates from the removal.
	h.c.nodes.upsert(node("n3", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
	}))
	clk.Step(time.Second)
	h.mustSync("ns/a")
	wantLatency(t, h.reg, 2, 6)
	if got := h.nodesOf("ns/a"); len(got) != 1 || got[0] != "n1" {
		t.Errorf("load balancer nodes %v, want [n1]", got)
	}
}

func wantLatency(t *testing.T, g prometheus.Gatherer, count uint64, sum float64) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == MetricNodeSyncLatency {
			hist := mf.GetMetric()[0].GetHistogram()
			if hist.GetSampleCount() != count || hist.GetSampleSum() != sum {
				t.Errorf("%s count %d sum %v, want %d and %v", MetricNodeSyncLatency, hist.GetSampleCount(), hist.GetSampleSum(), count, sum)
			}
			return
		}
	}
	t.Fatalf("%s not gathered", MetricNodeSyncLatency)
}
