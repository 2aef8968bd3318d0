package sandbox

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// IP families of the sandbox's cluster (--ip-family).
const (
	// IPFamilyAuto is dual-stack with real nodes only and their slot's VIP
	// pools, IPv4 otherwise: kwok nodes' addresses are the machine's
	// loopback, which has no IPv6 range to give them.
	IPFamilyAuto = ""
	IPFamilyIPv4 = "ipv4"
	IPFamilyDual = "dual"
)

// The sandbox's IPv6 ranges beside its IPv4 ones, unique-local, clear of
// the real-node slots' (fd00:5354::/48 and fd00:5354:1::/48): Services'
// cluster IPs and the nodes' pod CIDRs (a /64 each, as
// --node-cidr-mask-size-ipv6's default gives).
const (
	ServiceCIDR4 = "10.0.0.0/24"
	ServiceCIDR6 = "fd00:5354:ff::/112"
	ClusterCIDR6 = "fd00:5354:fe::/56"
)

// validIPFamily checks --ip-family against the rest of the options.
func (o Options) validIPFamily() error {
	switch o.IPFamily {
	case IPFamilyAuto, IPFamilyIPv4:
		return nil
	case IPFamilyDual:
		if o.Nodes != 0 || o.RealNodes == 0 || o.VIPPool != "" {
			return errors.New("--ip-family=dual: needs real nodes only (--nodes=0 --real-nodes=N) on their slot's VIP pools (no --vip-pool): kwok nodes' loopback addresses have no IPv6 range")
		}
		return nil
	}
	return fmt.Errorf("--ip-family=%s: want ipv4 or dual (or empty: dual with real nodes only)", o.IPFamily)
}

// dualStack reports whether the cluster is dual-stack, from the options
// as the run starts (--real-nodes resolved, --vip-pool as given).
func (o Options) dualStack() bool {
	switch o.IPFamily {
	case IPFamilyIPv4:
		return false
	case IPFamilyDual:
		return true
	}
	return o.RealNodes > 0 && o.Nodes == 0 && o.VIPPool == ""
}

// serviceCIDRs is kube-apiserver's --service-cluster-ip-range.
func (s *sandbox) serviceCIDRs() string {
	if s.dual {
		return ServiceCIDR4 + "," + ServiceCIDR6
	}
	return ServiceCIDR4
}

// serviceCIDRPrefixes is serviceCIDRs parsed, for the real nodes' routes.
func (s *sandbox) serviceCIDRPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, c := range strings.Split(s.serviceCIDRs(), ",") {
		out = append(out, netip.MustParsePrefix(c))
	}
	return out
}

// clusterCIDRs is the controller manager's --cluster-cidr.
func (s *sandbox) clusterCIDRs() string {
	if s.dual {
		return s.o.ClusterCIDR + "," + ClusterCIDR6
	}
	return s.o.ClusterCIDR
}
