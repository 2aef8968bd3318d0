package route

import (
	"fmt"

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
	labelResult                        = "result"

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
	outcomeError      = "error"
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
		outcome = outcomeError
	case changed:
		outcome = outcomeChanged
	}
	m.syncs.WithLabelValues(outcome, trigger).Inc()
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		creates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCreateTotal,
			Help: "Cloud route creations, by result (success, error).",
		}, []string{labelResult}),
		deletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricDeleteTotal,
			Help: "Cloud route deletions, by result (success, error).",
		}, []string{labelResult}),
		quota: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricQuotaExceededTotal,
			Help: "Route creations the cloud refused because the route table is full.",
		}),
		quotaOld: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricQuotaExceededTotalDeprecated,
			Help: "(Deprecated: use " + MetricQuotaExceededTotal + ".) Route creations the cloud refused because the route table is full.",
		}),
		backedOff: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricRoutesBackingOff,
			Help: "Routes whose creation failed and waits for its backoff before the next attempt.",
		}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRouteSyncs,
			Help: "[ALPHA] A metric counting the number of route reconciles with the cloud provider, labeled by the trigger (periodic or node_change) and the outcome (error if the reconcile failed, changed if at least one route was created or deleted, otherwise noop).",
		}, []string{"outcome", "trigger"}),
	}
	if err := metricsutil.Register(reg,
		m.creates,
		m.deletes,
		m.quota,
		m.quotaOld,
		m.backedOff,
		m.syncs,
	); err != nil {
		return nil, fmt.Errorf("route metrics: %w", err)
	}
	return m, nil
}
