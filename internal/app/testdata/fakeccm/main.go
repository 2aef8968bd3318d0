// Command fakeccm is the stratus command with a test provider registered
// only in upstream's global registry, for the daemon's integration tests.
//
// Run under the name of a vendor's binary it behaves like that vendor's
// main, so the vendor's published manifest arguments run unchanged:
// "digitalocean-cloud-controller-manager" defaults --cloud-provider to
// digitalocean and skips the in-cluster authentication lookup, as
// DigitalOcean's main.go sets its options. The provider behind every name is
// the test provider, since the vendors' clouds are not reachable here.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/stratus-ccm/stratus/cmd/stratus/cli"
	"github.com/stratus-ccm/stratus/pkg/testbed/fakeprovider"
)

func main() {
	fakeprovider.Register()
	fakeprovider.RegisterAs("hcloud")
	fakeprovider.RegisterAs("digitalocean")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	var code int
	if filepath.Base(os.Args[0]) == "digitalocean-cloud-controller-manager" {
		code = digitalOcean(ctx, os.Args[1:])
	} else {
		code = cli.Main(ctx, os.Args)
	}
	stop()
	os.Exit(code)
}

// digitalOcean mirrors DigitalOcean's cmd/digitalocean-cloud-controller-manager/main.go:
// opts.KubeCloudShared.CloudProvider.Name = "digitalocean" and
// opts.Authentication.SkipInClusterLookup = true, set as flag defaults.
func digitalOcean(ctx context.Context, args []string) int {
	cmd := cli.NewControllerManagerCommand()
	for name, value := range map[string]string{"cloud-provider": "digitalocean", "authentication-skip-lookup": "true"} {
		if err := cmd.Flags().Set(name, value); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
	}
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}
