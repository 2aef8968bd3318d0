package route

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// TestRouteSyncTotalAsUpstream: every pass is counted under upstream's
// route_controller_route_sync_total with upstream's outcome and trigger:
// the first periodic pass creates a route (changed), a pass a Node event
// queued finds nothing to do (noop), a pass whose list fails is an error.
func TestRouteSyncTotalAsUpstream(t *testing.T) {
	cloud := cloudfake.New()
	f := newFixture(t, cloud, Config{}, node("a", "lc://a", "10.244.0.0/24"))
	syncs := f.c.m.syncs
	if _, err := f.c.Reconcile(f.ctx, pass{}); err != nil {
		t.Fatal(err)
	}
	f.c.nodeChanged.Store(true)
	if _, err := f.c.Reconcile(f.ctx, pass{}); err != nil {
		t.Fatal(err)
	}
	cloud.SetError("ListRoutes", errors.New("cloud unavailable"))
	_, _ = f.c.Reconcile(f.ctx, pass{})
	for _, c := range []struct{ outcome, trigger string }{
		{outcomeChanged, triggerPeriodic},
		{outcomeNoop, triggerNodeChange},
		{kit.ResultError, triggerPeriodic},
	} {
		if got := testutil.ToFloat64(syncs.WithLabelValues(c.outcome, c.trigger)); got != 1 {
			t.Errorf("%s{outcome=%q,trigger=%q} = %v, want 1", MetricRouteSyncs, c.outcome, c.trigger, got)
		}
	}
	if got := testutil.CollectAndCount(syncs); got != 3 {
		t.Errorf("%d series, want 3", got)
	}
}
