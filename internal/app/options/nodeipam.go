package options

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam/cidrset"
)

// NodeIPAMConfig turns the flags into the allocator's configuration, with
// upstream's mask rules: --node-cidr-mask-size applies to a single-stack
// cluster and is refused with two cluster CIDRs, where the per-family flags
// decide.
func (o *Options) NodeIPAMConfig() (nodeipam.Config, error) {
	if o.ClusterCIDR == "" {
		return nodeipam.Config{}, errors.New(`--cluster-cidr="": required when --allocate-node-cidrs=true`)
	}
	clusterCIDRs, err := ParseCIDRList("cluster-cidr", o.ClusterCIDR)
	if err != nil {
		return nodeipam.Config{}, err
	}
	if len(clusterCIDRs) > 1 && o.NodeCIDRMaskSize != 0 {
		return nodeipam.Config{}, fmt.Errorf("--node-cidr-mask-size=%d: not allowed with a dual-stack --cluster-cidr=%s; use --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6",
			o.NodeCIDRMaskSize, o.ClusterCIDR)
	}
	var services []netip.Prefix
	if o.ServiceClusterIPRange != "" {
		if services, err = ParseCIDRList("service-cluster-ip-range", o.ServiceClusterIPRange); err != nil {
			return nodeipam.Config{}, err
		}
	}
	cfg := nodeipam.Config{ClusterCIDRs: clusterCIDRs, ServiceCIDRs: services}
	for _, c := range clusterCIDRs {
		flag, mask := "node-cidr-mask-size-ipv6", int(o.NodeCIDRMaskSizeIPv6)
		if c.Addr().Is4() {
			flag, mask = "node-cidr-mask-size-ipv4", int(o.NodeCIDRMaskSizeIPv4)
		}
		if o.NodeCIDRMaskSize != 0 {
			flag, mask = "node-cidr-mask-size", int(o.NodeCIDRMaskSize)
		}
		if mask < c.Bits() || mask > c.Addr().BitLen() || mask-c.Bits() > cidrset.MaxSubnetBits {
			return nodeipam.Config{}, fmt.Errorf("--%s=%d: does not fit --cluster-cidr %s (must be between %d and %d)",
				flag, mask, c, c.Bits(), min(c.Addr().BitLen(), c.Bits()+cidrset.MaxSubnetBits))
		}
		cfg.MaskSizes = append(cfg.MaskSizes, mask)
	}
	return cfg, nil
}
