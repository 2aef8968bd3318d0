package node

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestWaitingGauges: the gauges count the uninitialized Nodes the
// controller has seen and age the oldest from its first sighting, which a
// failed attempt's retry does not move; an initialized or deleted Node
// leaves them.
func TestWaitingGauges(t *testing.T) {
	ok, missing := newNode("n1"), newNode("n2")
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	reg := prometheus.NewRegistry()
	c, err := New(Deps{
		Client:     fake.NewClientBuilder().WithObjects(ok, missing).WithStatusSubresource(ok).Build(),
		Instances:  newFakeCloud(instance("n1", "10.0.0.1", "203.0.113.1")),
		Registerer: reg,
		Clock:      clk,
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

	// What the delete handler does for a deleted Node.
	c.forget("n2")
	assertWaiting(t, reg, 0, 0)
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
