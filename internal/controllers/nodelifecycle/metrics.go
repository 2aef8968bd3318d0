package nodelifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	cloudprovider "k8s.io/cloud-provider"

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

	// Upstream's names (k8s.io/cloud-provider v0.37's node lifecycle
	// controller, alpha), beside Stratus' own so that an operator's
	// dashboards and alerts written for upstream keep working.
	MetricMonitorNodesDuration = "cloud_node_lifecycle_controller_monitor_nodes_duration_seconds"
	MetricCloudProviderCalls   = "cloud_node_lifecycle_controller_cloud_provider_calls_total"
)

// The operation and result labels of MetricCloudProviderCalls: upstream's
// values, plus list_instances for the one list call per period that the
// instance-list extension makes in place of the per-node ones.
const (
	opInstanceExists   = "instance_exists"
	opInstanceShutdown = "instance_shutdown"
	opListInstances    = "list_instances"

	callSuccess        = "success"
	callError          = "error"
	callNotFound       = "instance_not_found"
	callNotImplemented = "not_implemented"
	callCanceled       = "canceled"
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

	upstreamDuration prometheus.Histogram
	calls            *prometheus.CounterVec
}

// observeCall counts one cloud call by its answer, as upstream's
// observeInstanceOp classifies it.
func (m *metrics) observeCall(op string, err error) {
	result := callSuccess
	switch {
	case errors.Is(err, cloudprovider.NotImplemented):
		result = callNotImplemented
	case errors.Is(err, cloudprovider.InstanceNotFound):
		result = callNotFound
	case errors.Is(err, context.Canceled):
		result = callCanceled
	case err != nil:
		result = callError
	}
	m.calls.WithLabelValues(op, result).Inc()
}

// observeExists counts an InstanceExists call; "does not exist" counts as
// instance_not_found, as upstream counts it.
func (m *metrics) observeExists(exists bool, err error) {
	if err == nil && !exists {
		err = cloudprovider.InstanceNotFound
	}
	m.observeCall(opInstanceExists, err)
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
		upstreamDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricMonitorNodesDuration,
			Help:    "[ALPHA] A metric measuring the duration in seconds of a single MonitorNodes loop execution.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCloudProviderCalls,
			Help: "[ALPHA] The total number of cloud provider API calls, labeled by operation and result.",
		}, []string{"operation", "result"}),
	}
	if err := metricsutil.Register(reg,
		m.deletions,
		m.taints,
		m.cloudErrors,
		m.duration,
		m.secondOpinions,
		m.held,
		m.heldNow,
		m.upstreamDuration,
		m.calls,
	); err != nil {
		return nil, fmt.Errorf("node lifecycle controller metrics: %w", err)
	}
	return m, nil
}
