package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/controllers/service"
)

// startServiceLBController starts the service-lb-controller when the
// provider has load balancers, as upstream does.
func startServiceLBController(ctx context.Context, cc ControllerContext) (bool, string, error) {
	lb, ok := cc.Cloud.LoadBalancer()
	if !ok {
		return false, "the cloud provider does not support load balancers", nil
	}
	var lister cloud.LoadBalancerLister
	if cc.Options.CloudExtensions {
		if l, ok := cc.Cloud.LoadBalancerLister(); ok {
			lister = l
		}
	}
	cl, err := cc.Clients(service.ControllerName)
	if err != nil {
		return false, "", err
	}
	cs, err := kubernetes.NewForConfig(cl.Config)
	if err != nil {
		return false, "", fmt.Errorf("service controller: kubernetes client: %w", err)
	}
	c, err := service.New(service.Deps{
		Client:       cs,
		Services:     service.CacheReader{Reader: cl.Reader},
		LoadBalancer: lb,
		Lister:       lister,
		Recorder:     cl.Recorder,
		Registerer:   cc.Metrics,
	}, service.Config{
		ClusterName:       cc.ClusterName,
		LoadBalancerClass: cc.Options.LoadBalancerClass,
		Workers:           int(cc.Options.ConcurrentServiceSyncs),
		DeleteOrphans:     cc.Options.DeleteOrphanedLoadBalancers,
		OrphanGrace:       cc.Options.OrphanedLoadBalancerGrace,
		OrphanInterval:    cc.Options.OrphanedLoadBalancerInterval,
	})
	if err != nil {
		return false, "", err
	}
	if err := c.Watch(ctx, cc.Manager.GetCache()); err != nil {
		return false, "", err
	}
	if err := cc.Manager.Add(c); err != nil {
		return false, "", fmt.Errorf("service controller: add to manager: %w", err)
	}
	return true, "", nil
}
