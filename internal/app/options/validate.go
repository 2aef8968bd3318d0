package options

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
)

// Validate checks every setting and returns one error listing each bad
// flag with its value, so an operator can fix a manifest in one go.
func (o *Options) Validate() error { return o.ValidateFor(o.known) }

// ValidateFor is Validate with --controllers checked against table, which
// includes a provider binary's extra controllers.
func (o *Options) ValidateFor(table []Controller) error {
	var errs []error
	bad := func(flag string, value any, why string) {
		errs = append(errs, fmt.Errorf("--%s=%v: %s", flag, value, why))
	}
	if o.CloudProvider == "" {
		bad("cloud-provider", `""`, "a cloud provider is required")
	}
	if o.ClusterName == "" {
		bad("cluster-name", `""`, "must not be empty")
	} else if msgs := validation.IsDNS1123Subdomain(o.ClusterName); len(msgs) > 0 {
		// Providers name and tag cloud resources with it (localcloud
		// refuses every load balancer otherwise): refuse it here, once.
		bad("cluster-name", o.ClusterName, strings.Join(msgs, "; "))
	}
	if _, err := ResolveControllers(o.Controllers, table); err != nil {
		errs = append(errs, err)
	}
	if _, err := LoadMigration(o, table); err != nil {
		errs = append(errs, err)
	}
	if o.KubeAPIQPS <= 0 {
		bad("kube-api-qps", o.KubeAPIQPS, "must be greater than 0")
	}
	if o.KubeAPIBurst <= 0 {
		bad("kube-api-burst", o.KubeAPIBurst, "must be greater than 0")
	}
	switch o.KubeAPIContentType {
	case "application/vnd.kubernetes.protobuf", "application/json":
	default:
		bad("kube-api-content-type", o.KubeAPIContentType, "must be application/vnd.kubernetes.protobuf or application/json")
	}
	positive := map[string]time.Duration{
		"min-resync-period":            o.MinResyncPeriod,
		"node-monitor-period":          o.NodeMonitorPeriod,
		"node-status-update-frequency": o.NodeStatusUpdateFrequency,
		"route-reconciliation-period":  o.RouteReconciliationPeriod,
	}
	for flag, d := range positive {
		if d <= 0 {
			bad(flag, d, "must be greater than 0")
		}
	}
	if o.ControllerStartInterval < 0 {
		bad("controller-start-interval", o.ControllerStartInterval, "must not be negative")
	}
	errs = append(errs, o.validateLeaderElection()...)
	if o.ConcurrentNodeSyncs < 1 {
		bad("concurrent-node-syncs", o.ConcurrentNodeSyncs, "must be at least 1")
	}
	if o.ConcurrentNodeStatusUpdates < 0 {
		bad("concurrent-node-status-updates", o.ConcurrentNodeStatusUpdates, "must not be negative")
	}
	if o.ConcurrentNodeLifecycleSyncs < 1 {
		bad("concurrent-node-lifecycle-syncs", o.ConcurrentNodeLifecycleSyncs, "must be at least 1")
	}
	if o.ConcurrentServiceSyncs < 1 {
		bad("concurrent-service-syncs", o.ConcurrentServiceSyncs, "must be at least 1")
	}
	errs = append(errs, o.validateNetworking(table)...)
	errs = append(errs, o.validateServing()...)
	errs = append(errs, o.validateDebugging()...)
	errs = append(errs, o.validateSafety()...)
	if o.CloudAPIQPS < 0 {
		bad("cloud-api-qps", o.CloudAPIQPS, "must not be negative")
	}
	if o.CloudAPIQPS > 0 && o.CloudAPIBurst < 1 {
		bad("cloud-api-burst", o.CloudAPIBurst, "must be at least 1 when --cloud-api-qps is set")
	}
	switch o.LoadBalancerTargets {
	case "nodes", "endpoints":
	default:
		bad("load-balancer-targets", o.LoadBalancerTargets, "must be nodes or endpoints")
	}
	if o.OrphanedLoadBalancerGrace < 0 {
		bad("orphaned-load-balancer-grace-period", o.OrphanedLoadBalancerGrace, "must not be negative")
	}
	if o.OrphanedLoadBalancerInterval <= 0 {
		bad("orphaned-load-balancer-check-period", o.OrphanedLoadBalancerInterval, "must be greater than 0")
	}
	return errors.Join(errs...)
}

func (o *Options) validateLeaderElection() []error {
	var errs []error
	if !o.LeaderElect {
		return nil
	}
	if o.ResourceLock != "leases" {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-lock=%s: only \"leases\" is supported", o.ResourceLock))
	}
	if o.LeaderElectName == "" {
		errs = append(errs, fmt.Errorf(`--leader-elect-resource-name="": must not be empty`))
	}
	if o.LeaderElectNamespace == "" {
		errs = append(errs, fmt.Errorf(`--leader-elect-resource-namespace="": must not be empty`))
	}
	if o.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period=%v: must be greater than 0", o.RetryPeriod))
	}
	// The same ordering client-go's leader elector insists on, reported
	// here with flag names instead of as a panic-free but cryptic error.
	if o.LeaseDuration <= o.RenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration=%v: must be greater than --leader-elect-renew-deadline=%v", o.LeaseDuration, o.RenewDeadline))
	}
	if o.RenewDeadline <= o.RetryPeriod {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline=%v: must be greater than --leader-elect-retry-period=%v", o.RenewDeadline, o.RetryPeriod))
	}
	return errs
}

func (o *Options) validateNetworking(table []Controller) []error {
	var errs []error
	if o.CIDRAllocatorType != RangeAllocator && o.CIDRAllocatorType != CloudAllocator {
		errs = append(errs, fmt.Errorf("--cidr-allocator-type=%s: must be %s or %s", o.CIDRAllocatorType, RangeAllocator, CloudAllocator))
	}
	if o.NodeCIDRMaskSize != 0 && (o.NodeCIDRMaskSize < 1 || o.NodeCIDRMaskSize > 128) {
		errs = append(errs, fmt.Errorf("--node-cidr-mask-size=%d: must be between 1 and 128", o.NodeCIDRMaskSize))
	}
	if o.NodeCIDRMaskSizeIPv4 < 1 || o.NodeCIDRMaskSizeIPv4 > 32 {
		errs = append(errs, fmt.Errorf("--node-cidr-mask-size-ipv4=%d: must be between 1 and 32", o.NodeCIDRMaskSizeIPv4))
	}
	if o.NodeCIDRMaskSizeIPv6 < 1 || o.NodeCIDRMaskSizeIPv6 > 128 {
		errs = append(errs, fmt.Errorf("--node-cidr-mask-size-ipv6=%d: must be between 1 and 128", o.NodeCIDRMaskSizeIPv6))
	}
	if o.ClusterCIDR != "" {
		if _, err := ParseCIDRList("cluster-cidr", o.ClusterCIDR); err != nil {
			errs = append(errs, err)
		}
	}
	if o.ServiceClusterIPRange != "" {
		if _, err := ParseCIDRList("service-cluster-ip-range", o.ServiceClusterIPRange); err != nil {
			errs = append(errs, err)
		}
	}
	if o.AllocateNodeCIDRs && ipamEnabled(o.Controllers, table) {
		// The allocator's own checks, so that a mask that cannot fit the
		// cluster CIDR fails here rather than on the leader after the lease.
		// Only when the allocator is asked for: upstream's app has none,
		// and accepts --allocate-node-cidrs=true without --cluster-cidr.
		cfg, err := o.NodeIPAMConfig()
		if err == nil {
			err = cfg.Check()
			if err != nil {
				err = fmt.Errorf("--service-cluster-ip-range=%s --cluster-cidr=%s: %w", o.ServiceClusterIPRange, o.ClusterCIDR, err)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if o.RouteReconciliationPeriod > 0 && o.RouteReconciliationPeriod < time.Second {
		errs = append(errs, fmt.Errorf("--route-reconciliation-period=%v: must be at least 1s", o.RouteReconciliationPeriod))
	}
	return errs
}

// Warnings lists settings that are accepted, as upstream accepts them,
// but have no effect; Run logs them before leader election.
func (o *Options) Warnings() []string {
	var out []string
	if o.ClusterCIDR != "" && !o.AllocateNodeCIDRs && !o.ConfigureCloudRoutes {
		out = append(out, fmt.Sprintf("--cluster-cidr=%s is ignored: it is used only with --configure-cloud-routes=true or --allocate-node-cidrs=true", o.ClusterCIDR))
	}
	if o.AllocateNodeCIDRs && ipamEnabled(o.Controllers, o.known) {
		out = append(out, serviceRangeOverlaps(o)...)
	}
	return out
}

// ipamEnabled reports whether spec (--controllers) enables the node IPAM
// controller: only an entry naming it (or an alias) does, '*' never, and a
// '-' entry for it wins. It reads the spec on its own terms, so that
// validate still checks the allocator's flags when another entry of the
// same list is wrong.
func ipamEnabled(spec []string, table []Controller) bool {
	alias := Aliases(table)
	on, off := false, false
	for _, raw := range spec {
		item := strings.TrimSpace(raw)
		n := strings.TrimPrefix(item, "-")
		if a, ok := alias[n]; ok {
			n = a
		}
		if n != nodeipam.ControllerName {
			continue
		}
		if strings.HasPrefix(item, "-") {
			off = true
		} else {
			on = true
		}
	}
	return on && !off
}

// serviceRangeOverlaps warns, as upstream's node IPAM logs, about a service
// range inside the cluster CIDR: accepted (the node subnets it touches are
// never handed out), but rarely meant. Validate refuses the case where
// nothing is left.
func serviceRangeOverlaps(o *Options) []string {
	clusters, err1 := ParseCIDRList("cluster-cidr", o.ClusterCIDR)
	services, err2 := ParseCIDRList("service-cluster-ip-range", o.ServiceClusterIPRange)
	if o.ClusterCIDR == "" || o.ServiceClusterIPRange == "" || err1 != nil || err2 != nil {
		return nil
	}
	var out []string
	for _, c := range clusters {
		for _, s := range services {
			if c.Overlaps(s) {
				out = append(out, fmt.Sprintf("--service-cluster-ip-range=%s overlaps --cluster-cidr=%s: the node subnets within %s are never allocated as pod CIDRs", o.ServiceClusterIPRange, o.ClusterCIDR, s))
			}
		}
	}
	return out
}

// ParseCIDRList parses a comma-separated list of at most one IPv4 and one
// IPv6 CIDR, as upstream's dual-stack flags take. The flag name is only used
// in error messages.
func ParseCIDRList(flag, value string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var v4, v6 int
	for _, s := range strings.Split(value, ",") {
		s = strings.TrimSpace(s)
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("--%s=%s: %q is not a CIDR: %w", flag, value, s, err)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("--%s=%s: %q has host bits set (did you mean %s?)", flag, value, s, p.Masked())
		}
		if p.Addr().Is4() {
			v4++
		} else {
			v6++
		}
		out = append(out, p)
	}
	if v4 > 1 || v6 > 1 {
		return nil, fmt.Errorf("--%s=%s: at most one IPv4 and one IPv6 CIDR are allowed", flag, value)
	}
	return out, nil
}
