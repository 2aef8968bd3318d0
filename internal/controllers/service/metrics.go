package service

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/internal/metricsutil"
)

// Metric names, kept as constants so dashboards and tests agree.
const (
	MetricSyncsTotal             = "stratus_service_syncs_total"
	MetricSyncDuration           = "stratus_service_sync_duration_seconds"
	MetricLoadBalancerUpdates    = "stratus_service_load_balancer_updates_total"
	MetricNodeSyncsTotal         = "stratus_service_node_syncs_total"
	MetricOrphanedLoadBalancers  = "stratus_service_orphaned_load_balancers"
	MetricOrphanedLBDeletesTotal = "stratus_service_orphaned_load_balancer_deletions_total"
	MetricDriftedLoadBalancers   = "stratus_service_drifted_load_balancers_total"
	MetricLoadBalancers          = "stratus_service_load_balancers"
	MetricNodeSyncLatency        = "stratus_service_node_sync_latency_seconds"
	MetricEndpointUpdates        = "stratus_service_load_balancer_endpoint_updates_total"
)

type metrics struct {
	syncs         *prometheus.CounterVec
	syncDuration  prometheus.Histogram
	updates       *prometheus.CounterVec
	nodeSyncs     prometheus.Counter
	orphans       prometheus.Gauge
	orphanDeletes *prometheus.CounterVec
	drifted       prometheus.Counter
	lbs           *prometheus.GaugeVec
	nodeLatency   prometheus.Histogram
	// endpointUpdates counts the EnsureLoadBalancerEndpoints calls made
	// for a change of endpoints alone.
	endpointUpdates *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var s metricsutil.Set
	m := &metrics{
		syncs:         s.CounterVec(MetricSyncsTotal, "Service syncs by result (success, retry: the cloud asked to come back later, error).", metricsutil.LabelResult),
		syncDuration:  s.Histogram(MetricSyncDuration, "Duration of one Service sync, cloud calls included.", prometheus.ExponentialBuckets(0.001, 2.5, 14)),
		updates:       s.CounterVec(MetricLoadBalancerUpdates, "UpdateLoadBalancer calls made because a load balancer's node set changed, by result.", metricsutil.LabelResult),
		nodeSyncs:     s.Counter(MetricNodeSyncsTotal, "Passes over the load balancers after (coalesced) node changes."),
		orphans:       s.Gauge(MetricOrphanedLoadBalancers, "Load balancers the cloud lists for this cluster whose Service no longer wants them, at the last check."),
		orphanDeletes: s.CounterVec(MetricOrphanedLBDeletesTotal, "Deletions of orphaned load balancers, by result.", metricsutil.LabelResult),
		drifted:       s.Counter(MetricDriftedLoadBalancers, "Load balancers found deleted or with changed backends in the cloud, behind the controller's back, and ensured again."),
		lbs:           s.GaugeVec(MetricLoadBalancers, "Load-balancer Services by the outcome of their last sync: pending (no ingress yet), failing (the last sync failed with an error), serving.", "state"),
		nodeLatency: s.Histogram(MetricNodeSyncLatency, "Seconds from the first node change that altered the eligible node set to the successful UpdateLoadBalancer carrying that set, "+
			"one observation per load balancer updated; includes the wait while a burst of node changes settles and the wait in the queue.", prometheus.ExponentialBuckets(0.1, 2, 14)),
		endpointUpdates: s.CounterVec(MetricEndpointUpdates, "EnsureLoadBalancerEndpoints calls made because an endpoint-target load balancer's endpoints changed (bursts coalesced), by result.", metricsutil.LabelResult),
	}
	if err := s.Register(reg, "service controller"); err != nil {
		return nil, err
	}
	return m, nil
}
