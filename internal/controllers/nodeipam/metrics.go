package nodeipam

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/internal/metricsutil"
)

// Metric names, kept as constants so dashboards and tests agree.
const (
	MetricCIDRsAllocated      = "stratus_nodeipam_cidrs_allocated"
	MetricCIDRsAvailable      = "stratus_nodeipam_cidrs_available"
	MetricAllocationFailures  = "stratus_nodeipam_allocation_failures_total"
	MetricCIDRsOutsideCluster = "stratus_nodeipam_node_cidrs_outside_cluster_total"
	MetricCIDRCollisions      = "stratus_nodeipam_node_cidr_collisions_total"
	labelFamily               = "family"
	labelReason               = "reason"
	familyIPv4                = "ipv4"
	familyIPv6                = "ipv6"
	failureExhausted          = "exhausted"
	failurePatch              = "patch_failed"
)

type metrics struct {
	allocated *prometheus.GaugeVec
	available *prometheus.GaugeVec
	failures  *prometheus.CounterVec
	outside   prometheus.Counter
	collision prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		allocated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricCIDRsAllocated,
			Help: "Pod CIDRs held by Nodes, by IP family (reserved ranges such as the service range not included).",
		}, []string{labelFamily}),
		available: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricCIDRsAvailable,
			Help: "Pod CIDRs still free to allocate, by IP family.",
		}, []string{labelFamily}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricAllocationFailures,
			Help: "Failed pod CIDR allocations, by reason (exhausted: the cluster CIDR is full; patch_failed: the Node could not be updated).",
		}, []string{labelReason}),
		outside: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricCIDRsOutsideCluster,
			Help: "Pod CIDRs found on Nodes that lie outside every --cluster-cidr (each counted once per Node).",
		}),
		collision: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricCIDRCollisions,
			Help: "Pod CIDRs found on a Node that another Node already holds (each counted once per Node).",
		}),
	}
	if err := metricsutil.Register(reg,
		m.allocated,
		m.available,
		m.failures,
		m.outside,
		m.collision,
	); err != nil {
		return nil, fmt.Errorf("nodeipam metrics: %w", err)
	}
	return m, nil
}
