package app

import (
	"context"
	"fmt"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
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
	clusterCIDRs, err := options.ParseCIDRList("cluster-cidr", o.ClusterCIDR)
	if err != nil {
		return false, "", err
	}
	shared, _, err := cc.shared(route.ControllerName)
	if err != nil {
		return false, "", err
	}
	c, err := route.New(route.Deps{
		Deps:   shared,
		Routes: routes,
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
	if o.CIDRAllocatorType == options.CloudAllocator {
		return false, "--cidr-allocator-type=" + options.CloudAllocator + ": the cloud assigns pod CIDRs; Stratus' allocator works from --cluster-cidr ranges only", nil
	}
	cfg, err := o.NodeIPAMConfig()
	if err != nil {
		return false, "", err
	}
	cfg.Workers = int(o.ConcurrentNodeSyncs)
	shared, _, err := cc.shared(nodeipam.ControllerName)
	if err != nil {
		return false, "", err
	}
	c, err := nodeipam.New(nodeipam.Deps{Deps: shared}, cfg)
	if err != nil {
		return false, "", fmt.Errorf("--cluster-cidr=%s --service-cluster-ip-range=%s: %w", o.ClusterCIDR, o.ServiceClusterIPRange, err)
	}
	if err := c.SetupWithManager(cc.Manager); err != nil {
		return false, "", err
	}
	return true, "", nil
}
