package nodelifecycle

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/metricsutil"
)

// Metric names.
const (
	MetricDeletions      = "stratus_node_lifecycle_deletions_total"
	MetricShutdownTaints = "stratus_node_lifecycle_shutdown_taints_total"
	MetricCloudErrors    = "stratus_node_lifecycle_cloud_errors_total"
	MetricPeriodDuration = "stratus_node_lifecycle_period_duration_seconds"
	// MetricSecondOpinions counts the Nodes the cloud's list lacked by
	// the per-node check's answer: confirmed (gone, may be deleted),
	// disagreed (the instance exists), failed (the check erred); each
	// answer once per Node per episode (opinionEpisodes), not per period,
	// so a Node the deletion cap holds adds one confirmation, however
	// many periods it waits.
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

	callNotFound       = "instance_not_found"
	callNotImplemented = "not_implemented"
	callCanceled       = "canceled"
)

type metrics struct {
	deletions   *prometheus.CounterVec
	taints      *prometheus.CounterVec
	cloudErrors prometheus.Counter
	duration    prometheus.Histogram
	// secondOpinions is MetricSecondOpinions; opinions, which answers it
	// has counted in each Node's episode.
	secondOpinions *prometheus.CounterVec
	opinions       *opinionEpisodes
	held           *prometheus.CounterVec
	heldNow        prometheus.Gauge

	upstreamDuration prometheus.Histogram
	calls            *prometheus.CounterVec
}

// observeCall counts one cloud call by its answer, as upstream's
// observeInstanceOp classifies it.
func (m *metrics) observeCall(op string, err error) {
	result := kit.ResultSuccess
	switch {
	case errors.Is(err, cloudprovider.NotImplemented):
		result = callNotImplemented
	case errors.Is(err, cloudprovider.InstanceNotFound):
		result = callNotFound
	case errors.Is(err, context.Canceled):
		result = callCanceled
	case err != nil:
		result = kit.ResultError
	}
	m.calls.WithLabelValues(op, result).Inc()
	if op == opListInstances && err == nil {
		// An answered list is what starts a period's second opinions:
		// the one place every period passes before asking them.
		m.opinions.newPeriod()
	}
}

// observeOpinion counts a second opinion's answer for n, once per episode.
func (m *metrics) observeOpinion(n *corev1.Node, answer string) {
	if m.opinions.first(n, answer) {
		m.secondOpinions.WithLabelValues(answer).Inc()
	}
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
	var s metricsutil.Set
	m := &metrics{
		deletions:        s.CounterVec(MetricDeletions, "Nodes deleted because their machine is gone, by result (success, error).", metricsutil.LabelResult),
		taints:           s.CounterVec(MetricShutdownTaints, "Shutdown taints written, by action (add, remove).", "action"),
		cloudErrors:      s.Counter(MetricCloudErrors, "Cloud answers that left a NotReady Node undecided (errors, timeouts, rate limits)."),
		duration:         s.Histogram(MetricPeriodDuration, "Duration of one monitor period.", prometheus.ExponentialBuckets(0.001, 2, 16)),
		secondOpinions:   s.CounterVec(MetricSecondOpinions, "NotReady Nodes missing from the cloud's instance list, by the per-node check's answer (confirmed, disagreed, failed), each answer counted once per Node while the Node stays NotReady and missing in consecutive periods; only confirmed ones may be deleted.", "answer"),
		opinions:         newOpinionEpisodes(),
		held:             s.CounterVec(MetricDeletionsHeld, "Deletions of Nodes whose instance is gone that the deletion cap held back, by scope (cluster, zone).", "scope"),
		heldNow:          s.Gauge(MetricDeletionsHeldNow, "Nodes whose instance is gone that the last monitor period did not delete because the deletion cap held."),
		upstreamDuration: s.Histogram(MetricMonitorNodesDuration, "[ALPHA] A metric measuring the duration in seconds of a single MonitorNodes loop execution.", prometheus.ExponentialBuckets(0.001, 2, 15)),
		calls:            s.CounterVec(MetricCloudProviderCalls, "[ALPHA] The total number of cloud provider API calls, labeled by operation and result.", "operation", metricsutil.LabelResult),
	}
	if err := s.Register(reg, "node lifecycle controller"); err != nil {
		return nil, err
	}
	return m, nil
}
