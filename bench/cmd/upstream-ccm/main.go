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
// upstream's app as under Stratus; run under a vendor's binary name it
// takes the flag defaults that vendor's main sets.
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

	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/test/vendors/profile"
)

func main() {
	cloudprovider.RegisterCloudProvider(lcprovider.ProviderName, lcprovider.New)
	for _, v := range profile.Vendors() {
		cloudprovider.RegisterCloudProvider(v.Provider, profile.Factory(v))
	}
	ccmOptions, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		fmt.Fprintf(os.Stderr, "upstream-ccm: initialize command options: %v\n", err)
		os.Exit(1)
	}
	fss := cliflag.NamedFlagSets{}
	command := app.NewCloudControllerManagerCommand(ccmOptions, cloudInitializer, app.DefaultInitFuncConstructors,
		names.CCMControllerAliases(), fss, wait.NeverStop)
	// Run under the name of a vendor's own binary, this is that vendor's
	// main: it sets the flags that main sets before the command line is
	// parsed (kube-vip's sets them this way; DigitalOcean's through the
	// options, to the same effect).
	if v, ok := profile.ByCommand(os.Args[0]); ok {
		for name, value := range v.FlagDefaults {
			f := command.Flags().Lookup(name)
			if f == nil {
				fmt.Fprintf(os.Stderr, "upstream-ccm: no flag %q\n", name)
				os.Exit(1)
			}
			if err := f.Value.Set(value); err != nil {
				fmt.Fprintf(os.Stderr, "upstream-ccm: failed to set flag %q: %v\n", name, err)
				os.Exit(1)
			}
		}
	}
	os.Exit(cli.Run(command))
}

// cloudInitializer builds the provider named by --cloud-provider, as the
// upstream sample does; the app package offers no error return here, so a
// failure ends the process the way upstream's does.
func cloudInitializer(cfg *config.CompletedConfig) cloudprovider.Interface {
	cc := cfg.ComponentConfig.KubeCloudShared.CloudProvider
	// A vendor main that hands its constructor --cluster-cidr (hcloud's
	// calls NewCloud with it) builds its provider directly.
	if v, ok := profile.ByProvider(cc.Name); ok && v.TakesClusterCIDR {
		cloud, err := profile.New(v)(nil, cfg.ComponentConfig.KubeCloudShared.ClusterCIDR)
		if err != nil {
			klog.Fatalf("Cloud provider could not be initialized: %v", err)
		}
		return cloud
	}
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
	if cc.Name == lcprovider.ProviderName && !cloud.HasClusterID() && !cfg.ComponentConfig.KubeCloudShared.AllowUntaggedCloud {
		klog.Fatalf("no ClusterID found; set --allow-untagged-cloud to run without one")
	}
	return cloud
}
