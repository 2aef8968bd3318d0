// Command vendor-ccm is a cloud-controller-manager built through pkg/ccm,
// as a vendor builds theirs, with the vendor doubles of package profile
// under each vendor's --cloud-provider name, given --cluster-cidr as a
// vendor main that passes it to its constructor does (hcloud's). The
// vendor tests use it to run
// the vendors' published arguments and RBAC. Run under the name of a
// vendor's own binary (profile.Vendor.Command: DigitalOcean's, kube-vip's),
// it is that vendor's main: it sets the flag defaults that main sets, so
// the vendor's arguments run untouched.
package main

import (
	"context"
	"os"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/ccm"
	"github.com/stratus-ccm/stratus/test/vendors/profile"
)

func main() {
	cfg := ccm.Config{}
	for _, v := range profile.Vendors() {
		newDouble := profile.New(v)
		cfg.Providers = append(cfg.Providers, ccm.Provider{Name: v.Provider,
			New: func(_ context.Context, in ccm.Inputs) (cloudprovider.Interface, error) {
				return newDouble(in.Config, in.ClusterCIDR)
			}})
	}
	if v, ok := profile.ByCommand(os.Args[0]); ok {
		cfg.FlagDefaults = v.FlagDefaults
	}
	ccm.Main(cfg)
}
