package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/teardown"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

type teardownFlags struct {
	provider, config, cluster, kubeconfig, output string
	leaseNamespace, leaseName                     string
	cidrs                                         []string
	yes, force                                    bool
	wait, window                                  time.Duration
}

// clusterTimeout bounds each call to the cluster's API server, so that an
// unreachable one is reported rather than waited on.
const clusterTimeout = 10 * time.Second

func newTeardownCommand() *cobra.Command {
	var f teardownFlags
	cmd := &cobra.Command{
		Use:   "teardown --cluster-name NAME --cloud-provider NAME [--cloud-config FILE] [--kubeconfig FILE] [--yes [--force]]",
		Short: "List, and with --yes delete, the load balancers and routes a cluster owns in its cloud",
		Long: `Lists the load balancers and routes the cloud holds for --cluster-name, through the
provider's own scoping by cluster name, and with --yes deletes them with the calls the
controller manager uses, then waits until the cloud no longer lists them. Without --yes
it is a dry run. It refuses, and leaves, what it cannot prove is the cluster's: a load
balancer without the Service it was made for, a route outside --cluster-cidr.

Run it after a cluster's Services are gone or its API server is, before deleting the
cloud credentials: load balancers and routes outlive a cluster torn down without
deleting every Service first.

It refuses a live cluster: a controller manager still running makes every deleted load
balancer again, with a new address, while its Services advertise the old one. Before
deleting anything it looks for signs of life, and with any one --yes deletes nothing
unless --force is given:
  - a load balancer or route the cloud says changed within --change-window (10m), named
    with when and by whom (needs a provider with the cloud.ModificationLister extension,
    as localcloud's; without it the teardown says the cloud cannot tell);
  - with --kubeconfig: the leader-election Lease (--leader-elect-resource-namespace/
    --leader-elect-resource-name, the daemon's defaults) held and renewed within its
    lease duration, and Services of type LoadBalancer still present. An API server that
    does not answer is reported, and is no sign.
A dry run reports the same signs and says that --yes would be refused.

Exit codes: 0 nothing is left (dry run: everything found can be deleted), 1 the
teardown could not run, 2 objects remain (refused, failed, or still listed), 3 the
cluster shows signs of life and --force was not given (nothing deleted; in a dry run,
--yes would be refused).`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := klog.NewContext(cmd.Context(), klog.Background())
			o, err := f.options(ctx)
			if err != nil {
				return err
			}
			s, err := teardown.Run(ctx, o)
			if err != nil {
				return err
			}
			if err := teardown.Write(cmd.OutOrStdout(), s, f.output); err != nil {
				return err
			}
			if s.RefusedAlive {
				return &teardown.AliveError{Summary: s}
			}
			if !s.Clean() {
				return &teardown.NotCleanError{Summary: s}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.cluster, "cluster-name", "", "The cluster's --cluster-name, as its controller manager ran with it (required)")
	fl.StringVar(&f.provider, "cloud-provider", lcprovider.ProviderName, "The cloud provider, as the controller manager's --cloud-provider")
	fl.StringVar(&f.config, "cloud-config", "", "The provider's configuration file, as the controller manager's --cloud-config")
	fl.StringSliceVar(&f.cidrs, "cluster-cidr", nil, "CIDRs the cluster's pod routes lie in; a route outside them is refused (comma-separated, or repeated)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "A kubeconfig for the cluster's API server: its leader-election Lease and LoadBalancer Services are signs of life; also for a provider whose Initialize needs it")
	fl.BoolVar(&f.yes, "yes", false, "Delete; without it, only list what would be deleted")
	fl.BoolVar(&f.force, "force", false, "With --yes, delete even when the cluster shows signs of life")
	fl.DurationVar(&f.window, "change-window", teardown.DefaultChangeWindow, "A load balancer or route the cloud says changed within this window is a sign of life")
	fl.StringVar(&f.leaseNamespace, "leader-elect-resource-namespace", teardown.DefaultLeaseNamespace, "The namespace of the controller manager's leader-election Lease (with --kubeconfig)")
	fl.StringVar(&f.leaseName, "leader-elect-resource-name", teardown.DefaultLeaseName, "The name of the controller manager's leader-election Lease (with --kubeconfig)")
	fl.DurationVar(&f.wait, "wait", 5*time.Minute, "How long to wait for the cloud to stop listing what was deleted")
	fl.StringVarP(&f.output, "output", "o", teardown.OutputText, "Output format: text or json")
	return cmd
}

// options checks the flags and builds the provider as the controller
// manager does.
func (f teardownFlags) options(ctx context.Context) (teardown.Options, error) {
	if f.cluster == "" {
		return teardown.Options{}, fmt.Errorf("--cluster-name is required: it scopes every list and deletion")
	}
	if f.output != teardown.OutputText && f.output != teardown.OutputJSON {
		return teardown.Options{}, fmt.Errorf("--output=%q: want %s or %s", f.output, teardown.OutputText, teardown.OutputJSON)
	}
	if f.wait <= 0 {
		return teardown.Options{}, fmt.Errorf("--wait=%v: want a positive duration", f.wait)
	}
	if f.window <= 0 {
		return teardown.Options{}, fmt.Errorf("--change-window=%v: want a positive duration", f.window)
	}
	if f.leaseNamespace == "" || f.leaseName == "" {
		return teardown.Options{}, errors.New("--leader-elect-resource-namespace and --leader-elect-resource-name must not be empty")
	}
	o := teardown.Options{ClusterName: f.cluster, Apply: f.yes, Wait: f.wait, Force: f.force, ChangeWindow: f.window,
		LeaseNamespace: f.leaseNamespace, LeaseName: f.leaseName}
	for _, c := range f.cidrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return teardown.Options{}, fmt.Errorf("--cluster-cidr=%q: %w", c, err)
		}
		o.ClusterCIDRs = append(o.ClusterCIDRs, p.Masked())
	}
	var cfg *rest.Config
	if f.kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return teardown.Options{}, fmt.Errorf("--kubeconfig: %w", err)
		}
		c.Timeout = clusterTimeout
		c.UserAgent = rest.DefaultKubernetesUserAgent() + "/stratus-teardown"
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			return teardown.Options{}, fmt.Errorf("--kubeconfig: %w", err)
		}
		cfg, o.Cluster = c, cs
	}
	p, err := f.buildProvider(ctx, cfg)
	if err != nil {
		return teardown.Options{}, err
	}
	o.Cloud = p
	return o, nil
}

func (f teardownFlags) buildProvider(ctx context.Context, cfg *rest.Config) (p cloudprovider.Interface, err error) {
	reg := cloud.NewRegistry()
	if err := reg.Register(lcprovider.ProviderName, lcprovider.New); err != nil {
		return nil, err
	}
	in := cloud.Inputs{Name: f.provider, ClusterName: f.cluster}
	if f.config != "" {
		b, err := os.ReadFile(f.config)
		if err != nil {
			return nil, fmt.Errorf("--cloud-config: %w", err)
		}
		in.Config = bytes.NewReader(b)
	}
	if p, err = reg.Build(ctx, in); err != nil {
		return nil, err
	}
	return p, f.initialize(p, cfg)
}

// initialize calls the provider's Initialize, as the controller manager
// does before any other call, with a client builder for --kubeconfig (cfg),
// or one that refuses when none was given; a provider that insists (its
// Initialize panics, as with ClientOrDie) is reported, not a crash.
func (f teardownFlags) initialize(p cloudprovider.Interface, cfg *rest.Config) (err error) {
	var builder cloudprovider.ControllerClientBuilder = noClusterBuilder{}
	if cfg != nil {
		builder = clientbuilder.SimpleControllerClientBuilder{ClientConfig: cfg}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cloud provider %q: Initialize failed (%v); pass --kubeconfig if it needs the cluster's API server", f.provider, r)
		}
	}()
	// Never closed: what the provider starts lives as long as the command.
	p.Initialize(builder, make(chan struct{}))
	return nil
}

// errNoCluster is what a provider gets when it asks for a client and no
// --kubeconfig was given.
var errNoCluster = errors.New("no --kubeconfig given: teardown runs without the cluster's API server")

// noClusterBuilder is the client builder without a cluster: Config and
// Client fail, and their OrDie forms panic as upstream's do on failure
// (Initialize's panic is then reported by initialize).
type noClusterBuilder struct{}

func (noClusterBuilder) Config(string) (*rest.Config, error) { return nil, errNoCluster }
func (noClusterBuilder) ConfigOrDie(string) *rest.Config     { panic(errNoCluster) }
func (noClusterBuilder) Client(string) (kubernetes.Interface, error) {
	return nil, errNoCluster
}
func (noClusterBuilder) ClientOrDie(string) kubernetes.Interface { panic(errNoCluster) }
