package cli

import (
	"github.com/spf13/cobra"

	"github.com/stratus-ccm/stratus/pkg/ccm"
	localcloudcli "github.com/stratus-ccm/stratus/pkg/localcloud/cli"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// daemonConfig is what the stratus binary links into the daemon: the
// providers compiled in. Providers that register themselves with
// upstream's cloudprovider.RegisterCloudProvider need only a blank import
// in main.
func daemonConfig() ccm.Config {
	return ccm.Config{Providers: []ccm.Provider{{Name: lcprovider.ProviderName, Factory: lcprovider.New,
		CheckConfig: lcprovider.CheckConfig}}}
}

// NewControllerManagerCommand returns the daemon's command, built through
// the same public entry point provider binaries use.
func NewControllerManagerCommand() *cobra.Command {
	cfg := daemonConfig()
	cfg.Name = "controller-manager"
	return ccm.NewCommand(cfg)
}

// extraCommands are the subcommands other packages provide.
func extraCommands() []*cobra.Command {
	return []*cobra.Command{localcloudcli.NewCommand(), newSandboxCommand(), newTeardownCommand()}
}
