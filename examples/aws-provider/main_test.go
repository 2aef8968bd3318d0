package main

import (
	"testing"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/ccm"
)

// TestAWSProviderIsLinked: the blank import put AWS' provider in
// upstream's registry under "aws", where the daemon's --cloud-provider
// finds it, and the command pkg/ccm builds from this binary's
// configuration defaults --cloud-provider to it.
func TestAWSProviderIsLinked(t *testing.T) {
	if !cloudprovider.IsCloudProvider(providerName) {
		t.Fatalf("upstream's registry has no provider %q: AWS' package did not register itself", providerName)
	}
	cmd := ccm.NewCommand(config())
	f := cmd.Flags().Lookup("cloud-provider")
	if f == nil {
		t.Fatal("the daemon has no --cloud-provider flag")
	}
	if f.DefValue != providerName {
		t.Errorf("--cloud-provider defaults to %q, want %q", f.DefValue, providerName)
	}
}
