package app

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// startServiceLBController starts the service-lb-controller when the
// provider has load balancers, as upstream does.
func startServiceLBController(ctx context.Context, cc ControllerContext) (bool, string, error) {
	lb, ok := cc.Cloud.LoadBalancer()
	if !ok {
		return false, "the cloud provider does not support load balancers", nil
	}
	var lister cloud.LoadBalancerLister
	var families cloud.IPFamilyLister
	var endpoints cloud.EndpointTargeter
	if cc.Options.CloudExtensions {
		if t, ok := cc.Cloud.EndpointTargeter(); ok {
			endpoints = t
		}
		if l, ok := cc.Cloud.LoadBalancerLister(); ok {
			lister = l
		}
		if f, ok := cc.Cloud.IPFamilyLister(); ok {
			families = f
		}
	}
	if cc.Options.LoadBalancerTargets == "endpoints" && endpoints == nil {
		klog.FromContext(ctx).Info("--load-balancer-targets=endpoints has no effect: the provider's load balancers cannot target endpoints (no cloud.EndpointTargeter, or --cloud-extensions=false); Services get node targets")
	}
	annots, _ := cc.Cloud.AnnotationChecker()
	shared, cl, err := cc.shared(service.ControllerName)
	if err != nil {
		return false, "", err
	}
	c, err := service.New(service.Deps{
		Deps:            shared,
		APIReader:       cl.APIReader,
		LoadBalancer:    lb,
		Lister:          lister,
		Annotations:     annots,
		Families:        families,
		Endpoints:       endpoints,
		ForeignBackends: cc.Options.Safety.ForeignNodeBackends,
	}, service.Config{
		ClusterName:       cc.ClusterName,
		LoadBalancerClass: cc.Options.LoadBalancerClass,
		// Only where the provider can: elsewhere every Service would be
		// told it falls back to node targets.
		EndpointTargetsByDefault: cc.Options.LoadBalancerTargets == "endpoints" && endpoints != nil,
		Workers:                  int(cc.Options.ConcurrentServiceSyncs),
		DeleteOrphans:            cc.Options.DeleteOrphanedLoadBalancers,
		OrphanGrace:              cc.Options.OrphanedLoadBalancerGrace,
		OrphanInterval:           cc.Options.OrphanedLoadBalancerInterval,
		NoConditions:             cc.Options.Observe,
	})
	if err != nil {
		return false, "", err
	}
	if err := c.SetupWithManager(cc.Manager); err != nil {
		return false, "", err
	}
	return true, "", nil
}
