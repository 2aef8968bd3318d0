// Command vendor-ccm is a cloud-controller-manager built through pkg/ccm,
// as a vendor builds theirs, with the vendor doubles of package profile
// under each vendor's --cloud-provider name. The vendor tests use it to run
// the vendors' published arguments and RBAC.
package main

import (
	"github.com/stratus-ccm/stratus/pkg/ccm"
	"github.com/stratus-ccm/stratus/test/vendors/profile"
)

func main() {
	cfg := ccm.Config{}
	for _, v := range profile.Vendors() {
		cfg.Providers = append(cfg.Providers, ccm.Provider{Name: v.Name, Factory: profile.Factory(v)})
	}
	ccm.Main(cfg)
}
