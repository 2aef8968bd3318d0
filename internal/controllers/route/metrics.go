package route

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/metricsutil"
)

// Metric names, kept as constants so dashboards and tests agree.
const (
	MetricCreateTotal        = "stratus_route_create_total"
	MetricDeleteTotal        = "stratus_route_delete_total"
	MetricQuotaExceededTotal = "stratus_route_quota_exceeded_total"
	// MetricQuotaExceededTotalDeprecated is the counter's first name,
	// outside the stratus_route_* pattern. Deprecated: it counts the same
	// as MetricQuotaExceededTotal and goes in a later release, once
	// dashboards and alerts had two releases to move.
	MetricQuotaExceededTotalDeprecated = "stratus_routes_quota_exceeded_total"
	MetricRoutesBackingOff             = "stratus_route_create_backoff_routes"

	// MetricRouteSyncs is upstream's name (k8s.io/cloud-provider v0.37,
	// alpha): passes by outcome (changed, noop, error) and trigger
	// (periodic, node_change), kept so that upstream's dashboards work.
	MetricRouteSyncs = "route_controller_route_sync_total"
)

// The label values of MetricRouteSyncs, upstream's.
const (
	triggerPeriodic   = "periodic"
	triggerNodeChange = "node_change"
	outcomeChanged    = "changed"
	outcomeNoop       = "noop"
)

type metrics struct {
	creates   *prometheus.CounterVec
	deletes   *prometheus.CounterVec
	quota     prometheus.Counter
	quotaOld  prometheus.Counter
	backedOff prometheus.Gauge
	syncs     *prometheus.CounterVec
}

// quotaExceeded counts a creation refused for a full route table, under
// both names while the old one is deprecated.
func (m *metrics) quotaExceeded() {
	m.quota.Inc()
	m.quotaOld.Inc()
}

// observeSync counts one pass as upstream's recordRouteSync does: error if
// it returned an error (a RetryError included: upstream's label set has no
// retry), changed if a route was created or deleted, else noop.
func (m *metrics) observeSync(trigger string, changed bool, o kit.Outcome) {
	outcome := outcomeNoop
	switch {
	case o.Err != nil:
		outcome = kit.ResultError
	case changed:
		outcome = outcomeChanged
	}
	m.syncs.WithLabelValues(outcome, trigger).Inc()
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var s metricsutil.Set
	m := &metrics{
		creates:   s.CounterVec(MetricCreateTotal, "Cloud route creations, by result (success, error).", metricsutil.LabelResult),
		deletes:   s.CounterVec(MetricDeleteTotal, "Cloud route deletions, by result (success, error).", metricsutil.LabelResult),
		quota:     s.Counter(MetricQuotaExceededTotal, "Route creations the cloud refused because the route table is full."),
		quotaOld:  s.Counter(MetricQuotaExceededTotalDeprecated, "(Deprecated: use "+MetricQuotaExceededTotal+".) Route creations the cloud refused because the route table is full."),
		backedOff: s.Gauge(MetricRoutesBackingOff, "Routes whose creation failed and waits for its backoff before the next attempt."),
		syncs:     s.CounterVec(MetricRouteSyncs, "[ALPHA] A metric counting the number of route reconciles with the cloud provider, labeled by the trigger (periodic or node_change) and the outcome (error if the reconcile failed, changed if at least one route was created or deleted, otherwise noop).", "outcome", "trigger"),
	}
	if err := s.Register(reg, "route"); err != nil {
		return nil, err
	}
	return m, nil
}
