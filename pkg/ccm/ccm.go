package ccm

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	cloudprovider "k8s.io/cloud-provider"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/componentmetrics"
	"github.com/stratus-ccm/stratus/internal/version"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// DefaultName is the command's name when Config.Name is empty: upstream's,
// so that manifests and process lists read the same.
const DefaultName = "cloud-controller-manager"

// Inputs are what the daemon hands a provider's constructor; see
// cloud.Inputs for each field.
type Inputs = cloud.Inputs

// Constructor builds a provider from Inputs.
type Constructor = cloud.Constructor

// Provider is one cloud provider linked into the binary, chosen at run
// time by --cloud-provider=Name. Set exactly one of Factory and New.
type Provider struct {
	// Name is the --cloud-provider value that selects it.
	Name string
	// Factory is upstream's constructor shape: it gets the contents of
	// --cloud-config (nil when the flag is unset).
	Factory cloudprovider.Factory
	// New gets the cloud config and what the daemon can give besides
	// (cluster name and CIDR, a node lister, an informer factory). The
	// provider's Initialize is called after it, on the leader only.
	New Constructor
	// CheckConfig, when set, validates the --cloud-config contents (nil
	// when the flag is unset) without building the provider: its errors
	// are reported with the flags' at startup, before leader election.
	CheckConfig func(config io.Reader) error
}

// ControllerContext is what an extra controller's Start receives.
type ControllerContext struct {
	// Manager is the controller-runtime manager every controller runs in:
	// its client and cache (Nodes, Services, ...) are shared, so a
	// controller adds no watch a built-in one already has.
	Manager manager.Manager
	// Cloud is the provider as the built-in controllers see it: each call
	// through it is counted, timed and paced like theirs (and planned, not
	// made, in observe mode). Cloud.Unwrap() returns the provider itself.
	Cloud cloud.Cloud
	// ClusterName is --cluster-name.
	ClusterName string
	// Metrics is where the controller registers its metrics; it is served
	// on /metrics.
	Metrics prometheus.Registerer
}

// Controller is a control loop of the provider's own, run beside the
// built-in ones on the leader, after the provider's Initialize.
type Controller struct {
	// Name is what --controllers calls it. It must differ from the
	// built-in names and their aliases.
	Name string
	// Start adds the controller to cc.Manager (which is already running)
	// and returns. It returns started=false with a reason when the
	// controller does not apply (logged, not an error); an error stops
	// the daemon.
	Start func(ctx context.Context, cc ControllerContext) (started bool, reason string, err error)
	// OffByDefault leaves it out of --controllers=*: it runs only when
	// named, as upstream's disabled-by-default controllers.
	OffByDefault bool
}

// Config is what a provider binary links in. The zero Config serves only
// providers registered with upstream's cloudprovider.RegisterCloudProvider.
type Config struct {
	// Providers are looked up by --cloud-provider before upstream's global
	// registry.
	Providers []Provider
	// Controllers are added to the built-in controllers.
	Controllers []Controller
	// Name is the command's name (cobra's Use); DefaultName when empty.
	Name string
	// Metrics receives every metric and is served on /metrics; nil uses
	// controller-runtime's registry, where its client, workqueue and
	// leader-election metrics already are.
	Metrics interface {
		prometheus.Registerer
		prometheus.Gatherer
	}
	// FlagDefaults replaces the defaults of the daemon's flags, by flag
	// name, as a provider's main sets upstream's options before building
	// the command (DigitalOcean's sets the --cloud-provider name and
	// --authentication-skip-lookup). The command line still overrides
	// them, and --help shows them as the defaults. A list flag's value is
	// comma-separated ("*,-route"). A name the command does not have, or a
	// value its flag refuses, is an error when the command runs.
	FlagDefaults map[string]string
	// Flags are the provider's own flags, added beside the daemon's, as
	// upstream's NewCloudControllerManagerCommand takes additionalFlags;
	// the provider reads the variables they are bound to, which are set
	// before its constructor runs. A flag whose name or shorthand the
	// daemon already has is an error when the command runs.
	Flags cliflag.NamedFlagSets
}

// NewCommand returns the daemon command: the command the stratus binary
// runs as "stratus controller-manager" or "cloud-controller-manager", with
// cfg's providers, controllers and flags. A mistake in cfg (a duplicate
// name, a Provider with neither constructor, a flag default for a flag
// that does not exist) is reported when the command runs.
func NewCommand(cfg Config) *cobra.Command {
	o := app.NewOptions()
	name := cfg.Name
	if name == "" {
		name = DefaultName
	}
	var flagErr error
	cmd := &cobra.Command{
		Use:   name,
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
			if flagErr != nil {
				return flagErr
			}
			return run(cmd.Context(), cmd.OutOrStdout(), o, cfg)
		},
	}
	o.AddFlags(cmd.Flags())
	flagErr = addConfigFlags(cmd.Flags(), cfg)
	return cmd
}

func run(ctx context.Context, out io.Writer, o *options.Options, cfg Config) error {
	// --version prints and exits; otherwise logging, feature gates and
	// profiling are applied to the process.
	if done, err := o.PrepareProcess(out); done || err != nil {
		return err
	}
	logger := klog.Background()
	ctrllog.SetLogger(logger)
	logger.Info("Stratus", "version", version.Get().String())
	deps, err := cfg.deps()
	if err != nil {
		return err
	}
	if err := componentmetrics.RegisterBuildInfo(deps.Metrics); err != nil {
		return err
	}
	return app.Run(klog.NewContext(ctx, logger), o, deps)
}

// deps turns cfg into the daemon's dependencies.
func (cfg Config) deps() (app.Deps, error) {
	reg := cloud.NewRegistry()
	for _, p := range cfg.Providers {
		var err error
		switch {
		case p.Factory != nil && p.New != nil:
			err = fmt.Errorf("cloud provider %q: set Factory or New, not both", p.Name)
		case p.New != nil:
			err = reg.RegisterConstructor(p.Name, p.New)
		default:
			err = reg.Register(p.Name, cloud.Factory(p.Factory))
		}
		if err == nil && p.CheckConfig != nil {
			err = reg.RegisterConfigCheck(p.Name, p.CheckConfig)
		}
		if err != nil {
			return app.Deps{}, err
		}
	}
	metrics := cfg.metrics()
	extra := make([]app.ExtraController, 0, len(cfg.Controllers))
	for _, c := range cfg.Controllers {
		extra = append(extra, app.ExtraController{Name: c.Name, Start: startFunc(c, metrics), OffByDefault: c.OffByDefault})
	}
	return app.Deps{Providers: reg, Metrics: metrics, Extra: extra}, nil
}

// metrics is the registry served on /metrics: cfg.Metrics, else
// controller-runtime's.
func (cfg Config) metrics() interface {
	prometheus.Registerer
	prometheus.Gatherer
} {
	if cfg.Metrics != nil {
		return cfg.Metrics
	}
	return ctrlmetrics.Registry
}

// startFunc adapts a public Controller to the daemon's table.
func startFunc(c Controller, metrics prometheus.Registerer) app.StartFunc {
	if c.Start == nil {
		return nil // the daemon refuses it by name
	}
	return func(ctx context.Context, cc app.ControllerContext) (bool, string, error) {
		return c.Start(ctx, ControllerContext{Manager: cc.Manager, Cloud: cc.Cloud, ClusterName: cc.ClusterName, Metrics: metrics})
	}
}

// Main runs NewCommand(cfg) on the process's arguments until SIGINT or
// SIGTERM, and exits: 0 after a graceful stop, 1 on an error, which it
// prints to stderr.
func Main(cfg Config) {
	os.Exit(Execute(cfg, os.Args[1:]))
}

// Execute runs NewCommand(cfg) with args until SIGINT or SIGTERM and
// returns the exit code Main would use. It is a process's entry point: it
// first sets client-go's process-wide metric hooks, so that cfg's registry
// serves upstream's rest_client_* metrics (which needs that no API client
// of the process has been built yet).
func Execute(cfg Config, args []string) int {
	if err := InstallClientMetrics(cfg.metrics()); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cmd := NewCommand(cfg)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

// InstallClientMetrics registers client-go's request metrics
// (rest_client_request_duration_seconds, rest_client_requests_total, ...,
// as component-base registers them for upstream's components) on reg, and
// points client-go's process-wide hooks at them. Main and Execute call it;
// a binary that runs NewCommand under its own root command calls it in
// main, before anything builds an API client. Later calls change nothing.
func InstallClientMetrics(reg prometheus.Registerer) error {
	if err := componentmetrics.InstallClientGo(reg); err != nil {
		return fmt.Errorf("client-go metrics: %w", err)
	}
	return nil
}
