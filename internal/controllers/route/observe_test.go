package route

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// In observe mode the wrapper refuses CreateRoute after recording it; the
// pass must plan the Node's condition as the creation would leave it, not
// as a failure (which would plan a spurious NetworkUnavailable=True).
func TestObserveModeRefusalIsNotAFailure(t *testing.T) {
	cloudRoutes := newFakeRoutes()
	cloudRoutes.failFor["10.244.0.0/24"] = fmt.Errorf("cloud CreateRoute: %w", cloud.ErrObserveOnly)
	f := newFixture(t, cloudRoutes, Config{}, node("a", "lc://a", "10.244.0.0/24"))
	f.mustSync()
	f.wantCondition("a", corev1.ConditionFalse, ConditionRouteCreated)
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events for a refused creation: %v", ev)
	}
	if got := testutil.ToFloat64(f.c.m.creates.WithLabelValues(kit.ResultError)); got != 0 {
		t.Errorf("create errors = %v, want 0", got)
	}
}
