package service

import (
	"fmt"

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
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricSyncsTotal,
			Help: "Service syncs by result (success, retry: the cloud asked to come back later, error).",
		}, []string{"result"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricSyncDuration,
			Help:    "Duration of one Service sync, cloud calls included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricLoadBalancerUpdates,
			Help: "UpdateLoadBalancer calls made because a load balancer's node set changed, by result.",
		}, []string{"result"}),
		nodeSyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricNodeSyncsTotal,
			Help: "Passes over the load balancers after (coalesced) node changes.",
		}),
		orphans: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricOrphanedLoadBalancers,
			Help: "Load balancers the cloud lists for this cluster whose Service no longer wants them, at the last check.",
		}),
		orphanDeletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricOrphanedLBDeletesTotal,
			Help: "Deletions of orphaned load balancers, by result.",
		}, []string{"result"}),
		drifted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricDriftedLoadBalancers,
			Help: "Load balancers found deleted or with changed backends in the cloud, behind the controller's back, and ensured again.",
		}),
		lbs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricLoadBalancers,
			Help: "Load-balancer Services by the outcome of their last sync: pending (no ingress yet), failing (the last sync failed with an error), serving.",
		}, []string{"state"}),
		nodeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: MetricNodeSyncLatency,
			Help: "Seconds from the first node change that altered the eligible node set to the successful UpdateLoadBalancer carrying that set, " +
				"one observation per load balancer updated; includes the wait while a burst of node changes settles and the wait in the queue.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 14),
		}),
	}
	if err := metricsutil.Register(reg,
		m.syncs,
		m.syncDuration,
		m.updates,
		m.nodeSyncs,
		m.orphans,
		m.orphanDeletes,
		m.drifted,
		m.lbs,
		m.nodeLatency,
	); err != nil {
		return nil, fmt.Errorf("service controller metrics: %w", err)
	}
	return m, nil
}
