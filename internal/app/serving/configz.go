package serving

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ccmconfigv1alpha1 "k8s.io/cloud-provider/config/v1alpha1"
	nodeconfigv1alpha1 "k8s.io/cloud-provider/controllers/node/config/v1alpha1"
	nodelifecycleconfigv1alpha1 "k8s.io/cloud-provider/controllers/nodelifecycle/config/v1alpha1"
	serviceconfigv1alpha1 "k8s.io/cloud-provider/controllers/service/config/v1alpha1"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	cmconfigv1alpha1 "k8s.io/controller-manager/config/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

// configzName is upstream's app.ConfigzName: the key of the one entry
// /configz serves, as upstream's cloud-controller-manager serves it.
const configzName = "cloudcontrollermanager.config.k8s.io"

// configzPath is component-base's configz.DefaultConfigzPath.
const configzPath = "/configz"

// componentConfig is the configuration in effect, in upstream's versioned
// CloudControllerManagerConfiguration, filled as upstream's options fill
// it from the same flags. Settings of Stratus' own have no field there and
// are left out, as upstream's type cannot carry them.
func componentConfig(o *options.Options, known []options.Controller, migration *options.MigrationPlan) *ccmconfigv1alpha1.CloudControllerManagerConfiguration {
	cfg := &ccmconfigv1alpha1.CloudControllerManagerConfiguration{
		Generic: genericConfig(o, known, migration),
		KubeCloudShared: ccmconfigv1alpha1.KubeCloudSharedConfiguration{
			CloudProvider:                ccmconfigv1alpha1.CloudProviderConfiguration{Name: o.CloudProvider, CloudConfigFile: o.CloudConfig},
			ExternalCloudVolumePlugin:    o.ExternalCloudVolumePlugin,
			UseServiceAccountCredentials: o.UseServiceAccountCredentials,
			AllowUntaggedCloud:           o.AllowUntaggedCloud,
			RouteReconciliationPeriod:    metav1.Duration{Duration: o.RouteReconciliationPeriod},
			ClusterName:                  o.ClusterName,
			ClusterCIDR:                  o.ClusterCIDR,
			AllocateNodeCIDRs:            o.AllocateNodeCIDRs,
			CIDRAllocatorType:            o.CIDRAllocatorType,
			ConfigureCloudRoutes:         ptr.To(o.ConfigureCloudRoutes),
			NodeSyncPeriod:               metav1.Duration{Duration: o.NodeSyncPeriod},
		},
		NodeController: nodeconfigv1alpha1.NodeControllerConfiguration{
			ConcurrentNodeSyncs:         o.ConcurrentNodeSyncs,
			ConcurrentNodeStatusUpdates: o.ConcurrentNodeStatusUpdates,
		},
		NodeLifecycleController: nodelifecycleconfigv1alpha1.NodeLifecycleControllerConfiguration{
			ConcurrentNodeLifecycleSyncs: o.ConcurrentNodeLifecycleSyncs,
			NodeMonitorPeriod:            metav1.Duration{Duration: o.NodeMonitorPeriod},
		},
		ServiceController:         serviceconfigv1alpha1.ServiceControllerConfiguration{ConcurrentServiceSyncs: o.ConcurrentServiceSyncs},
		NodeStatusUpdateFrequency: metav1.Duration{Duration: o.NodeStatusUpdateFrequency},
		Webhook:                   ccmconfigv1alpha1.WebhookConfiguration{Webhooks: o.Webhook.Webhooks},
	}
	cfg.SetGroupVersionKind(ccmconfigv1alpha1.SchemeGroupVersion.WithKind("CloudControllerManagerConfiguration"))
	return cfg
}

func genericConfig(o *options.Options, known []options.Controller, migration *options.MigrationPlan) cmconfigv1alpha1.GenericControllerManagerConfiguration {
	g := cmconfigv1alpha1.GenericControllerManagerConfiguration{
		// Port and Address describe the insecure port upstream removed; no
		// flag sets them there, so they keep the component config's
		// defaults, and so they do here.
		Address:         "0.0.0.0",
		MinResyncPeriod: metav1.Duration{Duration: o.MinResyncPeriod},
		ClientConnection: componentbaseconfigv1alpha1.ClientConnectionConfiguration{
			Kubeconfig: o.Kubeconfig, ContentType: o.KubeAPIContentType, QPS: o.KubeAPIQPS, Burst: o.KubeAPIBurst,
		},
		ControllerStartInterval: metav1.Duration{Duration: o.ControllerStartInterval},
		LeaderElection: componentbaseconfigv1alpha1.LeaderElectionConfiguration{
			LeaderElect:       ptr.To(o.LeaderElect),
			LeaseDuration:     metav1.Duration{Duration: o.LeaseDuration},
			RenewDeadline:     metav1.Duration{Duration: o.RenewDeadline},
			RetryPeriod:       metav1.Duration{Duration: o.RetryPeriod},
			ResourceLock:      o.ResourceLock,
			ResourceName:      o.LeaderElectName,
			ResourceNamespace: o.LeaderElectNamespace,
		},
		Controllers: canonicalControllers(o.Controllers, options.Aliases(known)),
		Debugging: componentbaseconfigv1alpha1.DebuggingConfiguration{
			EnableProfiling: ptr.To(o.Profiling), EnableContentionProfiling: ptr.To(o.ContentionProfiling),
		},
		LeaderMigrationEnabled: o.Migration.Enabled,
	}
	if c := migration.Config(); c != nil {
		g.LeaderMigration = cmconfigv1alpha1.LeaderMigrationConfiguration{LeaderName: c.LeaderName, ResourceLock: c.ResourceLock}
		for _, l := range c.ControllerLeaders {
			g.LeaderMigration.ControllerLeaders = append(g.LeaderMigration.ControllerLeaders,
				cmconfigv1alpha1.ControllerLeaderConfiguration{Name: l.Name, Component: l.Component})
		}
	}
	return g
}

// canonicalControllers is --controllers with aliases replaced by the names
// they stand for, keeping a leading "-", as upstream's options copy it.
func canonicalControllers(in []string, alias map[string]string) []string {
	out := make([]string, len(in))
	for i, c := range in {
		name, off := strings.TrimPrefix(c, "-"), strings.HasPrefix(c, "-")
		if canonical, ok := alias[name]; ok {
			name = canonical
		}
		if off {
			name = "-" + name
		}
		out[i] = name
	}
	return out
}

// configzHandler serves cfg as component-base's configz handler serves its
// registry: a JSON object with one entry per registered name, here the
// one upstream's cloud-controller-manager registers. The options do not
// change after start, so the body is encoded once.
func configzHandler(cfg *ccmconfigv1alpha1.CloudControllerManagerConfiguration) (http.Handler, error) {
	body, err := json.Marshal(map[string]any{configzName: cfg})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", configzPath, err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(body)
	}), nil
}
