package nodeipam

import (
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
	var s metricsutil.Set
	m := &metrics{
		allocated: s.GaugeVec(MetricCIDRsAllocated, "Pod CIDRs held by Nodes, by IP family (reserved ranges such as the service range not included).", labelFamily),
		available: s.GaugeVec(MetricCIDRsAvailable, "Pod CIDRs still free to allocate, by IP family.", labelFamily),
		failures:  s.CounterVec(MetricAllocationFailures, "Failed pod CIDR allocations, by reason (exhausted: the cluster CIDR is full; patch_failed: the Node could not be updated).", labelReason),
		outside:   s.Counter(MetricCIDRsOutsideCluster, "Pod CIDRs found on Nodes that lie outside every --cluster-cidr (each counted once per Node)."),
		collision: s.Counter(MetricCIDRCollisions, "Pod CIDRs found on a Node that another Node already holds (each counted once per Node)."),
	}
	if err := s.Register(reg, "nodeipam"); err != nil {
		return nil, err
	}
	return m, nil
}
