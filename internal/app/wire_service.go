package app

import (
	"context"

	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// startServiceLBController starts the service-lb-controller when the
// provider has load balancers, as upstream does.
func startServiceLBController(_ context.Context, cc ControllerContext) (bool, string, error) {
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
		Workers:           int(cc.Options.ConcurrentServiceSyncs),
		DeleteOrphans:     cc.Options.DeleteOrphanedLoadBalancers,
		OrphanGrace:       cc.Options.OrphanedLoadBalancerGrace,
		OrphanInterval:    cc.Options.OrphanedLoadBalancerInterval,
		NoConditions:      cc.Options.Observe,
	})
	if err != nil {
		return false, "", err
	}
	if err := c.SetupWithManager(cc.Manager); err != nil {
		return false, "", err
	}
	return true, "", nil
}
