// Command upstream-ccm is the benchmark peer: the upstream
// cloud-controller-manager, built from k8s.io/cloud-provider's app package
// with its own controllers and default flags, linked with Stratus'
// localcloud provider. The provider code is the very one Stratus uses, so
// the controllers are all that differs between the contestants.
//
// It follows k8s.io/cloud-provider/sample/basic_main.go, except that the
// provider is registered here in main rather than by an init() side effect.
// The vendor doubles of test/vendors/profile are registered too, under the
// vendors' names, so the vendor tests run the same providers under
// upstream's app as under Stratus.
package main

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // rest_client_requests_total and leader election metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // build info metric
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/test/vendors/profile"
)

func main() {
	cloudprovider.RegisterCloudProvider(localcloud.ProviderName, localcloud.New)
	for _, v := range profile.Vendors() {
		cloudprovider.RegisterCloudProvider(v.Name, profile.Factory(v))
	}
	ccmOptions, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		fmt.Fprintf(os.Stderr, "upstream-ccm: initialize command options: %v\n", err)
		os.Exit(1)
	}
	fss := cliflag.NamedFlagSets{}
	command := app.NewCloudControllerManagerCommand(ccmOptions, cloudInitializer, app.DefaultInitFuncConstructors,
		names.CCMControllerAliases(), fss, wait.NeverStop)
	os.Exit(cli.Run(command))
}

// cloudInitializer builds the provider named by --cloud-provider, as the
// upstream sample does; the app package offers no error return here, so a
// failure ends the process the way upstream's does.
func cloudInitializer(cfg *config.CompletedConfig) cloudprovider.Interface {
	cc := cfg.ComponentConfig.KubeCloudShared.CloudProvider
	cloud, err := cloudprovider.InitCloudProvider(cc.Name, cc.CloudConfigFile)
	if err != nil {
		klog.Fatalf("Cloud provider could not be initialized: %v", err)
	}
	if cloud == nil {
		klog.Fatalf("Cloud provider %q is unknown to this build", cc.Name)
	}
	// The sample's check, for localcloud; the vendor doubles start as their
	// vendors' mains start them, which do not check (DigitalOcean's
	// provider never has a cluster ID).
	if cc.Name == localcloud.ProviderName && !cloud.HasClusterID() && !cfg.ComponentConfig.KubeCloudShared.AllowUntaggedCloud {
		klog.Fatalf("no ClusterID found; set --allow-untagged-cloud to run without one")
	}
	return cloud
}
