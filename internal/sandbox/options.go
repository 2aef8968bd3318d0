package sandbox

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// Options configure a sandbox run.
type Options struct {
	StateDir string
	BinDir   string
	Nodes    int
	Zones    int
	// RealNodes is the number of real nodes (kubelet, containerd and
	// kube-proxy in network namespaces) beside the kwok ones; with any,
	// kube-controller-manager and kube-scheduler run too. AutoRealNodes,
	// the default, runs as many as fit when the machine can run them.
	RealNodes int
	NoDemo    bool
	// NoCCM leaves the controller manager to the user: the env file
	// carries its flags (STRATUS_CCM_FLAGS).
	NoCCM bool

	// localcloud realism, so a user can watch the CCM under a slow,
	// throttled or failing cloud. localcloud keeps its knobs in its state:
	// only the knobs named in KnobsSet are passed on (they override what
	// was set before, e.g. with `stratus localcloud config set`); a nil
	// KnobsSet passes them all.
	Latency            time.Duration
	RateLimit          float64
	RateBurst          int
	ErrorRate          float64
	LBProvisioningTime time.Duration
	LBDeletionTime     time.Duration
	KnobsSet           map[string]bool

	// Address pools of localcloud (CIDRs; empty: localcloud's default).
	// Two sandboxes on one machine need different VIP pools.
	VIPPool, InternalPool, ExternalPool string

	APIServerPort  int
	EtcdPort       int
	LocalcloudPort int
	CCMPort        int

	ClusterCIDR string
	// IPFamily is the cluster's IP family (--ip-family): IPFamilyAuto,
	// IPFamilyIPv4 or IPFamilyDual (dualstack.go).
	IPFamily string
	// NodeMonitorPeriod and NodeMonitorGracePeriod time the marking of
	// nodes whose machine stopped (see nodeMonitor); upstream's defaults.
	NodeMonitorPeriod      time.Duration
	NodeMonitorGracePeriod time.Duration
	// ReadyTimeout bounds the wait for nodes and the demo.
	ReadyTimeout time.Duration
	// CCMArgs are extra flags for the controller manager.
	CCMArgs []string
	// RealNodeImages are image tarballs every real node imports besides
	// those in BinDir/images (Kubernetes' e2e test images, say).
	RealNodeImages []string
}

// DefaultOptions returns the defaults of `stratus sandbox`.
func DefaultOptions() Options {
	return Options{
		StateDir:  ".stratus/sandbox",
		Nodes:     3,
		RealNodes: AutoRealNodes,
		Zones:     3,
		RateBurst: 10,
		// localcloud's own defaults, so that the sandbox's flags show them.
		LBProvisioningTime: 2 * time.Second,
		LBDeletionTime:     time.Second,
		APIServerPort:      16443,
		EtcdPort:           12379,
		LocalcloudPort:     18787,
		CCMPort:            10258,
		// Room for 16,384 nodes at /24, clear of the apiserver's default
		// Service range (10.0.0.0/24).
		ClusterCIDR:            "10.64.0.0/10",
		NodeMonitorPeriod:      DefaultNodeMonitorPeriod,
		NodeMonitorGracePeriod: DefaultNodeMonitorGracePeriod,
		ReadyTimeout:           10 * time.Minute,
	}
}

// Validate reports every bad value, naming the flag.
func (o Options) Validate() error {
	var errs []error
	if o.StateDir == "" {
		errs = append(errs, errors.New(`--state-dir="": must not be empty`))
	}
	if o.Nodes < 0 || (o.Nodes == 0 && o.RealNodes <= 0) {
		errs = append(errs, fmt.Errorf("--nodes=%d: must be at least 1, or 0 with --real-nodes N", o.Nodes))
	}
	if o.Nodes > 5000 {
		errs = append(errs, fmt.Errorf("--nodes=%d: at most 5000 fit in localcloud's default address pool and this machine", o.Nodes))
	}
	if (o.RealNodes < 0 && o.RealNodes != AutoRealNodes) || o.RealNodes > maxRealNodes {
		errs = append(errs, fmt.Errorf("--real-nodes=%d: want 0 to %d (each takes about 200 MiB), or -1 for as many as fit", o.RealNodes, maxRealNodes))
	}
	if o.Zones < 1 || o.Zones > 26 {
		errs = append(errs, fmt.Errorf("--zones=%d: must be between 1 and 26", o.Zones))
	}
	if err := o.knobs().Validate(); err != nil {
		errs = append(errs, api.FlagError(err))
	}
	for flag, v := range map[string]string{"vip-pool": o.VIPPool, "internal-pool": o.InternalPool, "external-pool": o.ExternalPool} {
		if v == "" {
			continue
		}
		if p, err := netip.ParsePrefix(v); err != nil || !p.Addr().Is4() || p.Bits() > 30 {
			errs = append(errs, fmt.Errorf("--%s=%s: want an IPv4 CIDR of at least /30, e.g. 127.0.101.0/24", flag, v))
		}
	}
	if err := o.validIPFamily(); err != nil {
		errs = append(errs, err)
	}
	if o.NodeMonitorPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--node-monitor-period=%v: must be greater than 0", o.NodeMonitorPeriod))
	}
	if o.NodeMonitorGracePeriod < o.NodeMonitorPeriod {
		errs = append(errs, fmt.Errorf("--node-monitor-grace-period=%v: must be at least --node-monitor-period (%v)", o.NodeMonitorGracePeriod, o.NodeMonitorPeriod))
	}
	if o.ReadyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--ready-timeout=%v: must be greater than 0", o.ReadyTimeout))
	}
	ports := map[string]int{"apiserver-port": o.APIServerPort, "etcd-port": o.EtcdPort, "localcloud-port": o.LocalcloudPort, "ccm-port": o.CCMPort}
	seen := map[int]string{}
	for flag, p := range ports {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("--%s=%d: must be between 1 and 65535", flag, p))
			continue
		}
		if other, dup := seen[p]; dup {
			errs = append(errs, fmt.Errorf("--%s=%d: same port as --%s", flag, p, other))
		}
		seen[p] = flag
	}
	return errors.Join(errs...)
}

// knobFlags are the sandbox's flags that set localcloud knobs: the common
// fault knobs, under localcloud serve's names (api.KnobFlag).
var knobFlags = []string{"latency", "rate-limit", "rate-burst", "error-rate", "lb-provisioning-time", "lb-deletion-time"}

// KnobFlags are the names of the flags that set localcloud knobs.
func KnobFlags() []string { return slices.Clone(knobFlags) }

func (o Options) knobs() api.Knobs {
	k := api.DefaultKnobs()
	k.Latency, k.RateLimit, k.RateBurst, k.ErrorRate = api.Duration(o.Latency), o.RateLimit, o.RateBurst, o.ErrorRate
	k.LBProvisioningTime, k.LBDeletionTime = api.Duration(o.LBProvisioningTime), api.Duration(o.LBDeletionTime)
	return k
}

// knobArgs are the flags of localcloud serve for the knobs given.
func (o Options) knobArgs() []string {
	values := map[string]string{
		"latency": o.Latency.String(), "rate-limit": strconv.FormatFloat(o.RateLimit, 'f', -1, 64),
		"rate-burst": strconv.Itoa(o.RateBurst), "error-rate": strconv.FormatFloat(o.ErrorRate, 'f', -1, 64),
		"lb-provisioning-time": o.LBProvisioningTime.String(), "lb-deletion-time": o.LBDeletionTime.String(),
	}
	var args []string
	for _, flag := range knobFlags {
		if o.KnobsSet == nil || o.KnobsSet[flag] {
			args = append(args, "--"+flag+"="+values[flag])
		}
	}
	return args
}
