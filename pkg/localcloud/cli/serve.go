package cli

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/netns"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/dataplane"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
)

type serveOptions struct {
	listen, stateDir                        string
	latency, provisioning, deletion         time.Duration
	rateLimit, errorRate                    float64
	rateBurst                               int
	quotaInstances, quotaLBs, quotaRts      int
	internalPool, externalPool, vips, vips6 string
	// The data plane: a namespace, a mode and the targets' network.
	dpNetns, dpMode, dpTargets string
	// changed lists the knob flags given on the command line.
	changed func(flag string) bool
	value   func(flag string) string
}

func newServeCommand(g *globals) *cobra.Command {
	d := api.DefaultKnobs()
	p := store.DefaultPools()
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a localcloud API and data plane",
		Long: `Runs the localcloud API and its load balancers' data plane. The realism knobs
are kept in the state dir: a restarted cloud resumes the settings it had (as
changed with "localcloud config set"); a knob flag given on the command line
overrides the saved value, and the other knob flags only seed a new cloud.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.changed = cmd.Flags().Changed
			o.value = func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
			cfg, err := o.config(g.tokenFile)
			if err != nil {
				return err
			}
			srv, err := server.New(cfg)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			ctx = klog.NewContext(ctx, klog.Background())
			if err := srv.Start(ctx); err != nil {
				_ = srv.Close()
				return err
			}
			tokenNote := "token from --token-file"
			if g.tokenFile == "" {
				tokenNote = "token in " + filepath.Join(o.stateDir, server.TokenFileName)
			}
			_, _ = fmt.Fprintf(cmd.OutOrStdout(), "localcloud listening on %s (%s)\n", srv.URL(), tokenNote)
			<-ctx.Done()
			return srv.Close()
		},
	}
	o.addFlags(cmd.Flags(), d, p)
	return cmd
}

// addFlags registers serve's flags, with d's knobs and p's pools as the
// defaults.
func (o *serveOptions) addFlags(f *pflag.FlagSet, d api.Knobs, p store.Pools) {
	f.StringVar(&o.listen, "listen", "127.0.0.1:8787", "API listen address")
	f.StringVar(&o.stateDir, "state-dir", "", "directory for the database (and the generated token); required")
	f.DurationVar(&o.latency, "latency", time.Duration(d.Latency), "added latency per API call")
	f.DurationVar(&o.provisioning, "lb-provisioning-time", time.Duration(d.LBProvisioningTime), "time a load balancer spends provisioning")
	f.DurationVar(&o.deletion, "lb-deletion-time", time.Duration(d.LBDeletionTime), "time a load balancer spends deleting")
	f.Float64Var(&o.rateLimit, "rate-limit", d.RateLimit, "API requests per second (token bucket); 0 disables")
	f.IntVar(&o.rateBurst, "rate-burst", d.RateBurst, "token bucket size")
	f.Float64Var(&o.errorRate, "error-rate", d.ErrorRate, "fraction of API requests answered 503 (0-1)")
	f.IntVar(&o.quotaInstances, "quota-instances", d.Quotas.Instances, "maximum live instances")
	f.IntVar(&o.quotaLBs, "quota-lbs", d.Quotas.LoadBalancers, "maximum load balancers")
	f.IntVar(&o.quotaRts, "quota-routes", d.Quotas.RoutesPerCluster, "maximum routes per cluster route table")
	f.StringVar(&o.internalPool, "internal-pool", p.Internal.String(), "CIDR for instance internal addresses")
	f.StringVar(&o.externalPool, "external-pool", p.External.String(), "CIDR for instance external addresses")
	f.StringVar(&o.vips, "vip-pool", p.VIP.String(), "CIDR for load balancer VIPs")
	f.StringVar(&o.vips6, "vip6-pool", "", "IPv6 CIDR for load balancers' IPv6 VIPs (at most /120, and local in --dataplane-netns); "+
		"empty: no IPv6 VIPs, a load balancer asking for one is refused")
	f.StringVar(&o.dpNetns, "dataplane-netns", "", "name or path of the network namespace that owns the VIP pool (its routes make it local), "+
		"where localcloud installs its route table (pod CIDRs via their instances, proto 78); empty: the machine's own, VIPs on loopback")
	f.StringVar(&o.dpMode, "dataplane", "proxy", "how load balancers forward: proxy (connections, from localcloud's address) or "+
		"passthrough (packets, nftables DNAT in --dataplane-netns, keeping the client's address)")
	f.StringVar(&o.dpTargets, "dataplane-target-network", "", "with --dataplane=passthrough, the IPv4 CIDR of the targets that route "+
		"clients' replies back through the namespace, and the IPv6 one after a comma; a load balancer with a target elsewhere is proxied")
}

// dataPlane validates the data plane's flags, naming the flag and value.
func (o *serveOptions) dataPlane() (dataplane.Options, error) {
	var d dataplane.Options
	if o.dpNetns != "" {
		d.Netns = o.dpNetns
		if !strings.Contains(o.dpNetns, "/") {
			d.Netns = netns.Path(o.dpNetns)
		}
		if _, err := os.Stat(d.Netns); err != nil {
			return d, fmt.Errorf("--dataplane-netns %q: no such network namespace (%s)", o.dpNetns, d.Netns)
		}
	}
	switch o.dpMode {
	case "proxy":
		if o.dpTargets != "" {
			return d, fmt.Errorf("--dataplane-target-network %q: only with --dataplane=passthrough", o.dpTargets)
		}
	case "passthrough":
		if o.dpNetns == "" {
			return d, fmt.Errorf("--dataplane %q: needs --dataplane-netns", o.dpMode)
		}
		// The IPv4 CIDR, and optionally the IPv6 one after a comma.
		v4, v6, dual := strings.Cut(o.dpTargets, ",")
		pr, err := netip.ParsePrefix(v4)
		if err != nil || !pr.Addr().Is4() {
			return d, fmt.Errorf("--dataplane-target-network %q: want the IPv4 CIDR of the targets' network, and its IPv6 one after a comma if the targets have IPv6 addresses", o.dpTargets)
		}
		d.PassThrough, d.TargetNetwork = true, pr.Masked()
		if dual {
			pr6, err := netip.ParsePrefix(v6)
			if err != nil || !pr6.Addr().Is6() || pr6.Addr().Is4In6() {
				return d, fmt.Errorf("--dataplane-target-network %q: %q is not an IPv6 CIDR", o.dpTargets, v6)
			}
			d.TargetNetwork6 = pr6.Masked()
		}
	default:
		return d, fmt.Errorf("--dataplane %q: want proxy or passthrough", o.dpMode)
	}
	return d, nil
}

// config validates the flags, naming the flag and its value on error.
func (o *serveOptions) config(tokenFile string) (server.Config, error) {
	if o.stateDir == "" {
		return server.Config{}, fmt.Errorf("--state-dir is required")
	}
	var pools store.Pools
	for _, pf := range []struct {
		flag, val string
		dst       *netip.Prefix
	}{{"--internal-pool", o.internalPool, &pools.Internal}, {"--external-pool", o.externalPool, &pools.External}, {"--vip-pool", o.vips, &pools.VIP}} {
		pr, err := netip.ParsePrefix(pf.val)
		if err != nil || !pr.Addr().Is4() || pr.Bits() > 30 {
			return server.Config{}, fmt.Errorf("%s %q: want an IPv4 CIDR of at least /30", pf.flag, pf.val)
		}
		*pf.dst = pr
	}
	if o.vips6 != "" {
		pr, err := netip.ParsePrefix(o.vips6)
		if err != nil || !pr.Addr().Is6() || pr.Addr().Is4In6() || pr.Bits() > 120 {
			return server.Config{}, fmt.Errorf("--vip6-pool %q: want an IPv6 CIDR of at least /120", o.vips6)
		}
		pools.VIP6 = pr.Masked()
	}
	k := api.Knobs{
		Latency: api.Duration(o.latency), LBProvisioningTime: api.Duration(o.provisioning),
		LBDeletionTime: api.Duration(o.deletion), RateLimit: o.rateLimit, RateBurst: o.rateBurst,
		ErrorRate: o.errorRate,
		Quotas:    api.Quotas{Instances: o.quotaInstances, LoadBalancers: o.quotaLBs, RoutesPerCluster: o.quotaRts},
	}
	var overrides api.KnobsPatch
	for _, key := range api.KnobKeys() {
		if flag := api.KnobFlag(key); o.changed != nil && o.changed(flag) {
			if err := overrides.Set(key, o.value(flag)); err != nil {
				return server.Config{}, api.FlagError(err)
			}
		}
	}
	if err := k.Validate(); err != nil {
		return server.Config{}, api.FlagError(err)
	}
	dp, err := o.dataPlane()
	if err != nil {
		return server.Config{}, err
	}
	if pools.VIP6.IsValid() && dp.Netns == "" {
		// IPv4 VIPs live on loopback's 127/8; IPv6 has no such range, and
		// making one local would change the machine's own routes.
		return server.Config{}, fmt.Errorf("--vip6-pool %q: needs --dataplane-netns, whose routes make the range local", o.vips6)
	}
	return server.Config{Listen: o.listen, StateDir: o.stateDir, TokenFile: tokenFile, Knobs: &k, KnobOverrides: &overrides, Pools: pools,
		DataPlane: dp}, nil
}
