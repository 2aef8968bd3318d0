package node

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// TestWaitingGauges: the gauges count the uninitialized Nodes the
// controller has seen and age the oldest from its first sighting, which a
// failed attempt's retry does not move; an initialized Node leaves them.
func TestWaitingGauges(t *testing.T) {
	ok, missing := newNode("n1"), newNode("n2")
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	reg := prometheus.NewRegistry()
	cloud := cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1"))
	c, err := New(Deps{
		Deps:      kit.Deps{Client: fake.NewClientBuilder().WithObjects(ok, missing).WithStatusSubresource(ok, missing).Build(), Registerer: reg, Clock: clk},
		Instances: cloud,
	}, Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	assertWaiting(t, reg, 0, 0)

	if err := c.sync(ctx, "n2"); err == nil {
		t.Fatal("sync of a Node without an instance succeeded")
	}
	assertWaiting(t, reg, 1, 0)

	clk.Step(30 * time.Second)
	if err := c.sync(ctx, "n2"); err == nil {
		t.Fatal("second sync of a Node without an instance succeeded")
	}
	assertWaiting(t, reg, 1, 30)

	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatalf("sync n1: %v", err)
	}
	clk.Step(10 * time.Second)
	assertWaiting(t, reg, 1, 40)

	// Its machine appears: the initialization's duration counts from the
	// first sighting, not from the last failed attempt. n1 took 0 s.
	cloud.PutInstance(instance("n2", "10.0.0.2", "203.0.113.2"))
	if err := c.sync(ctx, "n2"); err != nil {
		t.Fatalf("sync n2 once its instance exists: %v", err)
	}
	assertWaiting(t, reg, 0, 0)
	if got := histogramSum(t, reg, MetricInitializationDuration); got != 40 {
		t.Errorf("%s sum = %v, want 40 (n1 0 s, n2 40 s)", MetricInitializationDuration, got)
	}
}

// TestWaitingForgetsDeletedNodes: a deleted Node leaves the gauges.
func TestWaitingForgetsDeletedNodes(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	reg := prometheus.NewRegistry()
	c, err := New(Deps{
		Deps:      kit.Deps{Client: fake.NewClientBuilder().WithObjects(newNode("n1")).Build(), Registerer: reg, Clock: clk},
		Instances: cloudfake.New(),
	}, Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.sync(context.Background(), "n1"); err == nil {
		t.Fatal("sync of a Node without an instance succeeded")
	}
	clk.Step(time.Minute)
	assertWaiting(t, reg, 1, 60)
	// What the delete handler does for a deleted Node.
	c.forget("n1")
	assertWaiting(t, reg, 0, 0)
}

func histogramSum(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	t.Fatalf("%s not gathered", name)
	return 0
}

func assertWaiting(t *testing.T, g prometheus.Gatherer, count, age float64) {
	t.Helper()
	for name, want := range map[string]float64{MetricUninitializedNodes: count, MetricOldestUninitializedAge: age} {
		if got := gaugeValue(t, g, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

func gaugeValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s not gathered as one gauge", name)
	return 0
}
