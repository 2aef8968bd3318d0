// Command fake-ccm is a provider author's cloud-controller-manager: it
// links upstream's k8s.io/cloud-provider/fake provider into Stratus
// through the public entry point, pkg/ccm, exactly as a real provider's
// main does. It lives in its own module, outside Stratus' module path, so
// it can use nothing Stratus keeps internal.
package main

import (
	"github.com/stratus-ccm/stratus/pkg/ccm"

	"example.com/fake-provider/provider"
)

func main() {
	ccm.Main(ccm.Config{
		Providers: []ccm.Provider{{Name: provider.Name, New: provider.New}},
		// This binary runs one provider: --cloud-provider defaults to it,
		// as a vendor's main sets it, so manifests need not pass it.
		FlagDefaults: map[string]string{"cloud-provider": provider.Name},
	})
}
