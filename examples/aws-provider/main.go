// Command aws-ccm is a cloud-controller-manager built as a vendor builds
// Stratus with their provider: AWS' own provider
// (k8s.io/cloud-provider-aws, as the Go module proxy serves it) linked
// through the public entry point, pkg/ccm. AWS' provider registers itself
// under the name "aws" with upstream's cloudprovider.RegisterCloudProvider
// in an init(), so a blank import is all it takes; the binary defaults
// --cloud-provider to it, as AWS' own main does. It lives in its own
// module, outside Stratus' module path, so it can use nothing Stratus
// keeps internal.
package main

import (
	// Registers the "aws" provider (package k8s.io/cloud-provider-aws/pkg/providers/v1).
	_ "k8s.io/cloud-provider-aws/pkg/providers/v1"

	"github.com/stratus-ccm/stratus/pkg/ccm"
)

// providerName is the name AWS' provider registers itself under.
const providerName = "aws"

func main() {
	ccm.Main(config())
}

// config is the binary's Stratus configuration: no Providers entry, since
// AWS' provider is in upstream's registry already.
func config() ccm.Config {
	return ccm.Config{FlagDefaults: map[string]string{"cloud-provider": providerName}}
}
