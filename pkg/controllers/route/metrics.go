package route

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/pkg/metricsutil"
)

// Metric names, kept as constants so dashboards and tests agree.
const (
	MetricCreateTotal        = "stratus_route_create_total"
	MetricDeleteTotal        = "stratus_route_delete_total"
	MetricQuotaExceededTotal = "stratus_routes_quota_exceeded_total"
	MetricRoutesBackingOff   = "stratus_route_create_backoff_routes"
	labelResult              = "result"
	resultSuccess            = "success"
	resultError              = "error"
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
	if reg == nil {
		return m, nil
	}
	var err error
	if m.creates, err = metricsutil.Register(reg, m.creates); err != nil {
		return nil, err
	}
	if m.deletes, err = metricsutil.Register(reg, m.deletes); err != nil {
		return nil, err
	}
	if m.quota, err = metricsutil.Register(reg, m.quota); err != nil {
		return nil, err
	}
	if m.backedOff, err = metricsutil.Register(reg, m.backedOff); err != nil {
		return nil, err
	}
	return m, nil
}
