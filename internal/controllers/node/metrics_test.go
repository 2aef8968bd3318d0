package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// TestUpstreamDelayHistograms: initializing a Node observes the seconds
// since its creation in upstream's two histograms, with upstream's
// buckets, and a failed initialization observes nothing.
func TestUpstreamDelayHistograms(t *testing.T) {
	created := time.Unix(1_700_000_000, 0)
	ok, missing := newNode("n1"), newNode("n2")
	ok.CreationTimestamp = metav1.NewTime(created)
	missing.CreationTimestamp = metav1.NewTime(created)
	reg := prometheus.NewRegistry()
	c, err := New(Deps{
		Deps:      kit.Deps{Client: fake.NewClientBuilder().WithObjects(ok, missing).WithStatusSubresource(ok).Build(), Registerer: reg, Clock: clocktesting.NewFakeClock(created.Add(90 * time.Second))},
		Instances: cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1")),
	}, Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.sync(context.Background(), "n1"); err != nil {
		t.Fatalf("sync n1: %v", err)
	}
	if err := c.sync(context.Background(), "n2"); err == nil {
		t.Fatal("sync of a Node without an instance succeeded")
	}
	// 90 s falls in upstream's bucket le=256 (1, 4, 16, 64, 256, 1024).
	for _, name := range []string{MetricTaintRemovalDelay, MetricInitialNodeSyncDelay} {
		want := `
# HELP ` + name + ` ` + helpOf(t, reg, name) + `
# TYPE ` + name + ` histogram
` + name + `_bucket{le="1"} 0
` + name + `_bucket{le="4"} 0
` + name + `_bucket{le="16"} 0
` + name + `_bucket{le="64"} 0
` + name + `_bucket{le="256"} 1
` + name + `_bucket{le="1024"} 1
` + name + `_bucket{le="+Inf"} 1
` + name + `_sum 90
` + name + `_count 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), name); err != nil {
			t.Error(err)
		}
	}
}

func helpOf(t *testing.T, g prometheus.Gatherer, name string) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			if !strings.HasPrefix(mf.GetHelp(), "[ALPHA] Number of seconds after node creation") {
				t.Errorf("%s help %q is not upstream's", name, mf.GetHelp())
			}
			return mf.GetHelp()
		}
	}
	t.Fatalf("%s not registered", name)
	return ""
}
