package app

import (
	"context"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/controllers/node"
	"github.com/stratus-ccm/stratus/pkg/controllers/nodelifecycle"
)

// instanceLister returns the list-all-instances extension when the provider
// has it and --cloud-extensions allows it.
func instanceLister(cc ControllerContext) cloud.InstanceLister {
	if !cc.Options.CloudExtensions {
		return nil
	}
	if l, ok := cc.Cloud.InstanceLister(); ok {
		return l
	}
	return nil
}

// noInstancesReason is why the node controllers skip themselves: only a
// provider without any instances interface leaves them nothing to ask.
const noInstancesReason = "the cloud provider implements neither InstancesV2 nor Instances"

// startCloudNodeController starts the cloud-node-controller.
func startCloudNodeController() StartFunc {
	return func(_ context.Context, cc ControllerContext) (bool, string, error) {
		// A provider with only the legacy Instances (and Zones) is served
		// through an adapter, as upstream's controller serves it.
		in, ok := cc.Cloud.InstancesV2OrAdapted()
		if !ok {
			return false, noInstancesReason, nil
		}
		mgr := cc.Manager
		c, err := node.New(node.Deps{
			Client:     mgr.GetClient(),
			Instances:  in,
			Lister:     instanceLister(cc),
			Recorder:   mgr.GetEventRecorder(node.Name),
			Registerer: ctrlmetrics.Registry,
		}, node.Config{
			Workers:       int(cc.Options.ConcurrentNodeSyncs),
			StatusWorkers: int(cc.Options.ConcurrentNodeStatusUpdates),
			RefreshPeriod: cc.Options.NodeStatusUpdateFrequency,
		})
		if err != nil {
			return false, "", err
		}
		if err := c.SetupWithManager(mgr); err != nil {
			return false, "", err
		}
		return true, "", nil
	}
}

// startCloudNodeLifecycleController starts the cloud-node-lifecycle-controller.
func startCloudNodeLifecycleController() StartFunc {
	return func(_ context.Context, cc ControllerContext) (bool, string, error) {
		// A provider with only the legacy Instances (and Zones) is served
		// through an adapter, as upstream's controller serves it.
		in, ok := cc.Cloud.InstancesV2OrAdapted()
		if !ok {
			return false, noInstancesReason, nil
		}
		mgr := cc.Manager
		c, err := nodelifecycle.New(nodelifecycle.Deps{
			Client:     mgr.GetClient(),
			Instances:  in,
			Lister:     instanceLister(cc),
			Recorder:   mgr.GetEventRecorder(nodelifecycle.Name),
			Registerer: ctrlmetrics.Registry,
		}, nodelifecycle.Config{Period: cc.Options.NodeMonitorPeriod})
		if err != nil {
			return false, "", err
		}
		if err := c.SetupWithManager(mgr); err != nil {
			return false, "", err
		}
		return true, "", nil
	}
}
