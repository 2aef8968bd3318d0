package cli

import (
	"github.com/spf13/cobra"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	localcloudcli "github.com/stratus-ccm/stratus/pkg/localcloud/cli"
	localcloudprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// newProviderRegistry lists the providers compiled into this binary.
// Providers that register themselves with upstream's
// cloudprovider.RegisterCloudProvider need only a blank import in main.
func newProviderRegistry() (*cloud.Registry, error) {
	reg := cloud.NewRegistry()
	if err := reg.Register(localcloudprovider.ProviderName, localcloudprovider.New); err != nil {
		return nil, err
	}
	return reg, nil
}

// extraCommands are the subcommands other packages provide.
func extraCommands() []*cobra.Command {
	return []*cobra.Command{localcloudcli.NewCommand(), newSandboxCommand()}
}
