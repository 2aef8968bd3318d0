package app

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/pkg/cloud"
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

func hasInstancesV2(cc ControllerContext) bool {
	_, ok := cc.Cloud.InstancesV2()
	return ok
}

// startCloudNodeController starts the cloud-node-controller.
func startCloudNodeController(_ context.Context, cc ControllerContext) (bool, string, error) {
	// A provider with only the legacy Instances (and Zones) is served
	// through an adapter, as upstream's controller serves it.
	in, ok := cc.Cloud.InstancesV2OrAdapted()
	if !ok {
		return false, noInstancesReason, nil
	}
	shared, _, err := cc.shared(node.ControllerName)
	if err != nil {
		return false, "", err
	}
	c, err := node.New(node.Deps{
		Deps:      shared,
		Instances: in,
		Lister:    instanceLister(cc),
	}, node.Config{
		Workers:       int(cc.Options.ConcurrentNodeSyncs),
		StatusWorkers: int(cc.Options.ConcurrentNodeStatusUpdates),
		RefreshPeriod: cc.Options.NodeStatusUpdateFrequency,
		// Only the legacy adapter may leave a providerID empty.
		ProviderIDOptional: !hasInstancesV2(cc),
	})
	if err != nil {
		return false, "", err
	}
	if err := c.SetupWithManager(cc.Manager); err != nil {
		return false, "", err
	}
	return true, "", nil
}

// startCloudNodeLifecycleController starts the cloud-node-lifecycle-controller.
func startCloudNodeLifecycleController(ctx context.Context, cc ControllerContext) (bool, string, error) {
	// A provider with only the legacy Instances (and Zones) is served
	// through an adapter, as upstream's controller serves it.
	in, ok := cc.Cloud.InstancesV2OrAdapted()
	if !ok {
		return false, noInstancesReason, nil
	}
	shared, clients, err := cc.shared(nodelifecycle.ControllerName)
	if err != nil {
		return false, "", err
	}
	c, err := nodelifecycle.New(nodelifecycle.Deps{
		Deps:      shared,
		Instances: in,
		Lister:    instanceLister(cc),
		APIReader: clients.APIReader,
	}, nodelifecycle.Config{Period: cc.Options.NodeMonitorPeriod, Workers: int(cc.Options.ConcurrentNodeLifecycleSyncs),
		Cap: deletionCap(cc.Options), Record: deletionRecord(cc.Options)})
	if err != nil {
		return false, "", err
	}
	if err := c.SetupWithManager(ctx, cc.Manager); err != nil {
		return false, "", err
	}
	return true, "", nil
}

// deletionCap is the lifecycle controller's cap from the options.
func deletionCap(o *options.Options) nodelifecycle.DeletionCap {
	return nodelifecycle.DeletionCap{
		Window:       o.Safety.NodeDeletionWindow,
		MaxShare:     o.Safety.NodeDeletionMaxShare,
		MaxZoneShare: o.Safety.NodeDeletionMaxZoneShare,
		Min:          o.Safety.NodeDeletionMin,
	}
}

// deletionRecord is where the lifecycle controller keeps its deletion
// cap's window, so that a leader change does not reset it: a ConfigMap
// beside the leader-election Lease, named after it. It is kept with
// --leader-elect=false too, where a restart would otherwise reset it.
func deletionRecord(o *options.Options) types.NamespacedName {
	return types.NamespacedName{Namespace: o.LeaderElectNamespace, Name: nodelifecycle.RecordName(o.LeaderElectName)}
}
