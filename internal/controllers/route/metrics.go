package route

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/internal/metricsutil"
)

// Metric names, kept as constants so dashboards and tests agree.
const (
	MetricCreateTotal        = "stratus_route_create_total"
	MetricDeleteTotal        = "stratus_route_delete_total"
	MetricQuotaExceededTotal = "stratus_routes_quota_exceeded_total"
	MetricRoutesBackingOff   = "stratus_route_create_backoff_routes"
	labelResult              = "result"
)

type metrics struct {
	creates   *prometheus.CounterVec
	deletes   *prometheus.CounterVec
	quota     prometheus.Counter
	backedOff prometheus.Gauge
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
		backedOff: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricRoutesBackingOff,
			Help: "Routes whose creation failed and waits for its backoff before the next attempt.",
		}),
	}
	if err := metricsutil.Register(reg,
		m.creates,
		m.deletes,
		m.quota,
		m.backedOff,
	); err != nil {
		return nil, fmt.Errorf("route metrics: %w", err)
	}
	return m, nil
}
