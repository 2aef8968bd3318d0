package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/internal/metricsutil"
)

// Metric names.
const (
	MetricInitializations        = "stratus_node_initializations_total"
	MetricInitializationDuration = "stratus_node_initialization_duration_seconds"
	MetricRefreshes              = "stratus_node_refreshes_total"
	MetricRefreshDuration        = "stratus_node_refresh_duration_seconds"
	MetricRefreshWrites          = "stratus_node_refresh_writes_total"
	MetricInstanceLists          = "stratus_node_instance_lists_total"
	MetricInstanceListWaiters    = "stratus_node_instance_list_waiters"
	MetricInstanceListServed     = "stratus_node_instance_list_served_total"
	// MetricForeignNodes counts the Nodes of another platform that
	// Stratus leaves alone in a hybrid cluster (--cloud-provider-platforms).
	MetricForeignNodes = "stratus_node_foreign_nodes"
	// MetricUninitializedNodes is the number of Nodes the controller knows
	// to carry the uninitialized taint, and MetricOldestUninitializedAge
	// how long the oldest of them has waited since the controller first
	// saw it (waiting.go).
	MetricUninitializedNodes     = "stratus_node_uninitialized_nodes"
	MetricOldestUninitializedAge = "stratus_node_oldest_uninitialized_node_age_seconds"

	// MetricTaintRemovalDelay and MetricInitialNodeSyncDelay are upstream
	// cloud node controller's histograms, under its names, buckets and
	// meaning, so that dashboards written for upstream CCMs keep their
	// series: seconds from the Node's creation to the removal of the
	// uninitialized taint, and to the end of its initial sync. Stratus
	// removes the taint in the last write of the sync, so the two differ
	// only by the event's recording.
	MetricTaintRemovalDelay    = "node_controller_cloud_provider_taint_removal_delay_seconds"
	MetricInitialNodeSyncDelay = "node_controller_initial_node_sync_delay_seconds"
)

// upstreamDelayBuckets are upstream's buckets for both delays: 1 s to
// about 17 min.
func upstreamDelayBuckets() []float64 { return prometheus.ExponentialBuckets(1, 4, 6) }

// Values of the "result" label.
const (
	resultCloudError       = "cloud_error"
	resultInstanceNotFound = "instance_not_found"
	resultInvalidMetadata  = "invalid_metadata"
	resultProvidedNodeIP   = "provided_node_ip"
	resultAPIError         = "api_error"
)

// Values of the "served" label: how a sync got its list answer.
const (
	servedCached = "cached"
)

type metrics struct {
	inits         *prometheus.CounterVec
	initDuration  prometheus.Histogram
	refreshes     *prometheus.CounterVec
	refreshTime   prometheus.Histogram
	refreshWrites *prometheus.CounterVec
	lists         *prometheus.CounterVec
	listWaiters   prometheus.Histogram
	listServed    *prometheus.CounterVec
	foreign       prometheus.Gauge
	taintRemoval  prometheus.Histogram
	initialSync   prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var s metricsutil.Set
	m := &metrics{
		inits:         s.CounterVec(MetricInitializations, "Node initialization attempts by result (success, cloud_error, instance_not_found, invalid_metadata, provided_node_ip, api_error).", metricsutil.LabelResult),
		initDuration:  s.Histogram(MetricInitializationDuration, "Time from when the controller first saw an uninitialized Node to its successful initialization.", prometheus.ExponentialBuckets(0.05, 2, 14)),
		refreshes:     s.CounterVec(MetricRefreshes, "Refresh periods over initialized Nodes by result.", metricsutil.LabelResult),
		refreshTime:   s.Histogram(MetricRefreshDuration, "Duration of one refresh period over every initialized Node.", prometheus.ExponentialBuckets(0.01, 2, 14)),
		refreshWrites: s.CounterVec(MetricRefreshWrites, "API server writes made by refreshes, by kind (status: addresses, metadata: labels).", "kind"),
		lists:         s.CounterVec(MetricInstanceLists, "ListInstances calls made to serve node syncs and refreshes, by result.", metricsutil.LabelResult),
		listWaiters:   s.Histogram(MetricInstanceListWaiters, "Node syncs that shared one ListInstances call.", prometheus.ExponentialBuckets(1, 2, 12)),
		listServed:    s.CounterVec(MetricInstanceListServed, "Node syncs served by an answer already at hand (no cloud call of their own).", "served"),
		foreign:       s.Gauge(MetricForeignNodes, "Nodes of another platform (--cloud-provider-platforms) that Stratus' controllers leave alone."),
		// The help texts are upstream's, with the stability prefix
		// component-base gives an alpha metric.
		taintRemoval: s.Histogram(MetricTaintRemovalDelay, "[ALPHA] Number of seconds after node creation when NodeController removed the cloud-provider taint of a single node.", upstreamDelayBuckets()),
		initialSync:  s.Histogram(MetricInitialNodeSyncDelay, "[ALPHA] Number of seconds after node creation when NodeController finished the initial synchronization of a single node.", upstreamDelayBuckets()),
	}
	if err := s.Register(reg, "node controller"); err != nil {
		return nil, err
	}
	return m, nil
}
