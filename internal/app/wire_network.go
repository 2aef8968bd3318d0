package app

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam/cidrset"
	"github.com/stratus-ccm/stratus/internal/controllers/route"
)

// startNodeRouteController programs cloud routes for the pod CIDRs on the
// Nodes, whoever allocated them (most often kube-controller-manager). As
// upstream's, it needs only --configure-cloud-routes and a provider with
// Routes; --allocate-node-cidrs plays no part. --cluster-cidr tells this
// cluster's routes apart from others in the same route table, so without
// it the controller is skipped: upstream exits with an error there, after
// winning the lease; Stratus keeps its other controllers running and says
// which flag is missing.
func startNodeRouteController(_ context.Context, cc ControllerContext) (bool, string, error) {
	o := cc.Options
	if !o.ConfigureCloudRoutes {
		return false, "--configure-cloud-routes=false", nil
	}
	routes, ok := cc.Cloud.Routes()
	if !ok {
		return false, fmt.Sprintf("cloud provider %s does not support routes", cc.Cloud.ProviderName()), nil
	}
	if o.ClusterCIDR == "" {
		return false, `--cluster-cidr="": the route controller needs the cluster's pod CIDRs to tell its routes apart`, nil
	}
	clusterCIDRs, err := ParseCIDRList("cluster-cidr", o.ClusterCIDR)
	if err != nil {
		return false, "", err
	}
	cl, err := cc.Clients(route.ControllerName)
	if err != nil {
		return false, "", err
	}
	pol, err := cc.ownership()
	if err != nil {
		return false, "", err
	}
	c, err := route.New(route.Deps{
		Client:     cl.Client,
		Routes:     routes,
		Recorder:   cl.Recorder,
		Recovery:   cc.Cloud,
		Registerer: cc.Metrics,

		// Hybrid clusters: which Nodes are the provider's.
		Ownership: pol,
		Explain:   cc.Explain,
	}, route.Config{
		ClusterName:     cc.ClusterName,
		ClusterCIDRs:    clusterCIDRs,
		ReconcilePeriod: o.RouteReconciliationPeriod,
	})
	if err != nil {
		return false, "", err
	}
	if err := c.SetupWithManager(cc.Manager); err != nil {
		return false, "", err
	}
	return true, "", nil
}

// startNodeIPAMController allocates pod CIDRs. The table keeps it off
// unless --controllers names it; named, it still needs
// --allocate-node-cidrs=true, as Azure's manager's node-ipam does.
func startNodeIPAMController(_ context.Context, cc ControllerContext) (bool, string, error) {
	o := cc.Options
	if !o.AllocateNodeCIDRs {
		return false, "--allocate-node-cidrs=false", nil
	}
	if o.CIDRAllocatorType == CloudAllocator {
		return false, "--cidr-allocator-type=" + CloudAllocator + ": the cloud assigns pod CIDRs; Stratus' allocator works from --cluster-cidr ranges only", nil
	}
	cfg, err := nodeIPAMConfig(o)
	if err != nil {
		return false, "", err
	}
	cfg.Workers = int(o.ConcurrentNodeSyncs)
	cl, err := cc.Clients(nodeipam.ControllerName)
	if err != nil {
		return false, "", err
	}
	c, err := nodeipam.New(nodeipam.Deps{
		Client:     cl.Client,
		Recorder:   cl.Recorder,
		Registerer: cc.Metrics,
	}, cfg)
	if err != nil {
		return false, "", fmt.Errorf("--cluster-cidr=%s --service-cluster-ip-range=%s: %w", o.ClusterCIDR, o.ServiceClusterIPRange, err)
	}
	if err := c.SetupWithManager(cc.Manager); err != nil {
		return false, "", err
	}
	return true, "", nil
}

// nodeIPAMConfig turns the flags into the allocator's configuration, with
// upstream's mask rules: --node-cidr-mask-size applies to a single-stack
// cluster and is refused with two cluster CIDRs, where the per-family flags
// decide.
func nodeIPAMConfig(o *Options) (nodeipam.Config, error) {
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
