package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/version"
)

// NewControllerManagerCommand returns the daemon's command.
func NewControllerManagerCommand() *cobra.Command {
	o := app.NewOptions()
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the cloud controller manager (flags compatible with upstream cloud-controller-manager)",
		Long: `Runs the control loops that link the cluster to its cloud: node initialization,
node lifecycle, Services of type LoadBalancer, cloud routes and node IPAM.
Flags carry upstream cloud-controller-manager's names and defaults, except
where docs/operations.md says Stratus picks a better default.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments %q: the controller manager takes flags only", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logsapi.ValidateAndApply(o.Logs, nil); err != nil {
				return fmt.Errorf("logging flags: %w", err)
			}
			logger := klog.Background()
			ctrllog.SetLogger(logger)
			if o.UseServiceAccountCredentials {
				logger.Info("--use-service-account-credentials is accepted for compatibility and has no effect: all controllers share Stratus' credentials")
			}
			logger.Info("Stratus", "version", version.Get().String())
			providers, err := newProviderRegistry()
			if err != nil {
				return err
			}
			ctx := klog.NewContext(cmd.Context(), logger)
			return app.Run(ctx, o, app.Deps{Providers: providers, Metrics: ctrlmetrics.Registry})
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
