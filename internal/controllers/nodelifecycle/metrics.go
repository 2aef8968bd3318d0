package nodelifecycle

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/internal/metricsutil"
)

// Metric names.
const (
	MetricDeletions      = "stratus_node_lifecycle_deletions_total"
	MetricShutdownTaints = "stratus_node_lifecycle_shutdown_taints_total"
	MetricCloudErrors    = "stratus_node_lifecycle_cloud_errors_total"
	MetricPeriodDuration = "stratus_node_lifecycle_period_duration_seconds"
	// MetricSecondOpinions counts the per-node checks of Nodes the
	// cloud's list lacked, by answer: confirmed (gone, may be deleted),
	// disagreed (the instance exists), failed (the check erred).
	MetricSecondOpinions = "stratus_node_lifecycle_second_opinions_total"
	// MetricDeletionsHeld counts the deletions the cap held back, by the
	// scope whose cap held (cluster, zone); MetricDeletionsHeldNow is how
	// many Nodes the last period held back.
	MetricDeletionsHeld    = "stratus_node_lifecycle_deletions_held_total"
	MetricDeletionsHeldNow = "stratus_node_lifecycle_deletions_held"
)

type metrics struct {
	deletions   *prometheus.CounterVec
	taints      *prometheus.CounterVec
	cloudErrors prometheus.Counter
	duration    prometheus.Histogram
	// secondOpinions is MetricSecondOpinions.
	secondOpinions *prometheus.CounterVec
	held           *prometheus.CounterVec
	heldNow        prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricDeletions,
			Help: "Nodes deleted because their machine is gone, by result (success, error).",
		}, []string{"result"}),
		taints: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricShutdownTaints,
			Help: "Shutdown taints written, by action (add, remove).",
		}, []string{"action"}),
		cloudErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricCloudErrors,
			Help: "Cloud answers that left a NotReady Node undecided (errors, timeouts, rate limits).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricPeriodDuration,
			Help:    "Duration of one monitor period.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		secondOpinions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricSecondOpinions,
			Help: "Per-node checks of NotReady Nodes missing from the cloud's instance list, by answer (confirmed, disagreed, failed); only confirmed ones may be deleted.",
		}, []string{"answer"}),
		held: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricDeletionsHeld,
			Help: "Deletions of Nodes whose instance is gone that the deletion cap held back, by scope (cluster, zone).",
		}, []string{"scope"}),
		heldNow: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricDeletionsHeldNow,
			Help: "Nodes whose instance is gone that the last monitor period did not delete because the deletion cap held.",
		}),
	}
	if err := metricsutil.Register(reg,
		m.deletions,
		m.taints,
		m.cloudErrors,
		m.duration,
		m.secondOpinions,
		m.held,
		m.heldNow,
	); err != nil {
		return nil, fmt.Errorf("node lifecycle controller metrics: %w", err)
	}
	return m, nil
}
