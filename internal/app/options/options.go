package options

import (
	"strings"
	"time"

	"github.com/spf13/pflag"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	ccmoptions "k8s.io/cloud-provider/options"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// UserAgent identifies Stratus in API server audit logs and metrics; every
// client the daemon builds sends it, with a suffix naming the client's use.
const UserAgent = "stratus-cloud-controller-manager"

// Defaults that differ from upstream's cloud-controller-manager, with why.
const (
	// DefaultConcurrentNodeSyncs: upstream uses 1, which serialises every
	// cloud round trip during node initialization. Node syncs are
	// independent, and with the list-all-instances extension most of them
	// make no cloud call at all, so 10 workers cost little and keep a burst
	// of new nodes bounded by API server QPS rather than cloud latency.
	DefaultConcurrentNodeSyncs = 10
	// DefaultConcurrentServiceSyncs: upstream uses 1, so one node change
	// reaches N load balancers in N sequential cloud calls. 10 workers keep
	// a burst of updates bounded by the cloud's own rate limit.
	DefaultConcurrentServiceSyncs = 10
	// DefaultCloudAPIQPS and DefaultCloudAPIBurst: no hard ceiling on calls
	// to the cloud, as upstream. The wrapper paces calls adaptively from the
	// cloud's throttling answers instead, so Stratus is never slower than
	// upstream on a fast cloud; an operator who knows the account's limit
	// sets --cloud-api-qps to it (the burst applies then).
	DefaultCloudAPIQPS   = 0
	DefaultCloudAPIBurst = 100
)

// The --cidr-allocator-type values upstream accepts (kube-controller-manager's
// ipam.RangeAllocatorType and ipam.CloudAllocatorType). Upstream's
// cloud-controller-manager accepts the flag and never reads it, having no
// node IPAM controller; Stratus' node-ipam controller allocates from ranges
// and leaves allocation to the cloud under CloudAllocator (it skips
// itself), so the value means what it means upstream. Any other value is
// refused, naming the two.
const (
	RangeAllocator = "RangeAllocator"
	CloudAllocator = "CloudAllocator"
)

// Options holds every command-line setting of the controller manager. Field
// names follow upstream's component config where one exists. The serving,
// authentication, authorization, webhook and debugging groups are upstream's
// own option types (k8s.io/apiserver, k8s.io/cloud-provider), so their flags,
// defaults and validation are upstream's by construction.
type Options struct {
	CloudProvider      string
	CloudConfig        string
	ClusterName        string
	AllowUntaggedCloud bool
	Controllers        []string

	Kubeconfig         string
	Master             string
	KubeAPIQPS         float32
	KubeAPIBurst       int32
	KubeAPIContentType string
	MinResyncPeriod    time.Duration

	LeaderElect          bool
	LeaseDuration        time.Duration
	RenewDeadline        time.Duration
	RetryPeriod          time.Duration
	ResourceLock         string
	LeaderElectName      string
	LeaderElectNamespace string
	// ControllerStartInterval is upstream's --controller-start-interval:
	// the leader waits a jittered [d, 2d) after starting each controller.
	ControllerStartInterval time.Duration
	Migration               MigrationOptions
	Observe                 bool

	NodeMonitorPeriod           time.Duration
	NodeStatusUpdateFrequency   time.Duration
	ConcurrentNodeSyncs         int32
	ConcurrentNodeStatusUpdates int32
	ConcurrentServiceSyncs      int32
	// ConcurrentNodeLifecycleSyncs is upstream's (v0.37) worker count of
	// the node lifecycle controller: NotReady Nodes checked in parallel.
	ConcurrentNodeLifecycleSyncs int32

	ClusterCIDR               string
	ServiceClusterIPRange     string
	AllocateNodeCIDRs         bool
	CIDRAllocatorType         string
	NodeCIDRMaskSize          int32
	NodeCIDRMaskSizeIPv4      int32
	NodeCIDRMaskSizeIPv6      int32
	ConfigureCloudRoutes      bool
	RouteReconciliationPeriod time.Duration
	// ExternalCloudVolumePlugin and NodeSyncPeriod are accepted as upstream
	// accepts them; neither changes what a cloud-controller-manager does
	// (upstream's does not read them either).
	ExternalCloudVolumePlugin string
	NodeSyncPeriod            time.Duration

	// Serving groups: upstream's option types.
	SecureServing  *apiserveroptions.SecureServingOptions
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	Authorization  *apiserveroptions.DelegatingAuthorizationOptions
	Webhook        *ccmoptions.WebhookOptions
	WebhookServing *ccmoptions.WebhookServingOptions

	// Debugging, feature gates, logging and --version.
	Profiling           bool
	ContentionProfiling bool
	FeatureGate         featuregate.MutableVersionedFeatureGate
	Logs                *logsapi.LoggingConfiguration
	Version             VersionFlag

	// Stratus' own settings.
	CloudAPIQPS       float64
	CloudAPIBurst     int
	CloudExtensions   bool
	LoadBalancerClass string
	// LoadBalancerTargets is what a load balancer targets when its Service
	// has node ports and does not say (nodes or endpoints).
	LoadBalancerTargets          string
	DeleteOrphanedLoadBalancers  bool
	OrphanedLoadBalancerGrace    time.Duration
	OrphanedLoadBalancerInterval time.Duration

	// Safety bounds what Stratus may destroy (options_safety.go).
	Safety SafetyOptions

	// UseServiceAccountCredentials runs each controller as its own
	// ServiceAccount (internal/app/identity.go).
	UseServiceAccountCredentials bool

	// setupErr is a failure to build the feature gate, reported by Validate.
	setupErr error
	// known are the controllers --controllers may name (the daemon's
	// table), for the flag's help and Validate.
	known []Controller
}

// New returns Options with upstream's defaults, except the ones the
// constants above document, for a daemon that runs the known controllers.
func New(known []Controller) *Options {
	fg, err := newFeatureGate()
	return &Options{
		ClusterName:                  "kubernetes",
		Safety:                       newSafetyOptions(),
		Controllers:                  []string{"*"},
		KubeAPIQPS:                   20,
		KubeAPIBurst:                 30,
		KubeAPIContentType:           "application/vnd.kubernetes.protobuf",
		MinResyncPeriod:              12 * time.Hour,
		LeaderElect:                  true,
		LeaseDuration:                15 * time.Second,
		RenewDeadline:                10 * time.Second,
		RetryPeriod:                  2 * time.Second,
		ResourceLock:                 "leases",
		LeaderElectName:              "cloud-controller-manager",
		LeaderElectNamespace:         "kube-system",
		NodeMonitorPeriod:            5 * time.Second,
		NodeStatusUpdateFrequency:    5 * time.Minute,
		ConcurrentNodeSyncs:          DefaultConcurrentNodeSyncs,
		ConcurrentServiceSyncs:       DefaultConcurrentServiceSyncs,
		ConcurrentNodeLifecycleSyncs: 1,
		CIDRAllocatorType:            RangeAllocator,
		NodeCIDRMaskSizeIPv4:         24,
		NodeCIDRMaskSizeIPv6:         64,
		ConfigureCloudRoutes:         true,
		RouteReconciliationPeriod:    10 * time.Second,
		SecureServing:                newSecureServingOptions(),
		Authentication:               newAuthenticationOptions(),
		Authorization:                apiserveroptions.NewDelegatingAuthorizationOptions(),
		Webhook:                      ccmoptions.NewWebhookOptions(),
		WebhookServing:               ccmoptions.NewWebhookServingOptions(ccmoptions.ProviderDefaults{}),
		Profiling:                    true,
		FeatureGate:                  fg,
		Logs:                         logsapi.NewLoggingConfiguration(),
		CloudAPIQPS:                  DefaultCloudAPIQPS,
		CloudAPIBurst:                DefaultCloudAPIBurst,
		CloudExtensions:              true,
		LoadBalancerTargets:          "nodes",
		OrphanedLoadBalancerGrace:    10 * time.Minute,
		OrphanedLoadBalancerInterval: 5 * time.Minute,
		setupErr:                     err,
		known:                        known,
	}
}

// Known returns the controllers --controllers may name, as New was given
// them.
func (o *Options) Known() []Controller { return o.known }

// AddFlags registers every flag on fs, with upstream's names, one group at
// a time (options_*.go hold the groups).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.addGenericFlags(fs)
	o.addControllerFlags(fs)
	o.addNetworkFlags(fs)
	o.addServingFlags(fs)
	o.addStratusFlags(fs)
	o.addSafetyFlags(fs)
	o.addDebuggingFlags(fs)
	o.addSwitchFlags(fs)
	o.addCredentialFlags(fs)
}

func (o *Options) addGenericFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.CloudProvider, "cloud-provider", o.CloudProvider, "The provider for cloud services (e.g. localcloud). Required.")
	fs.StringVar(&o.CloudConfig, "cloud-config", o.CloudConfig, "The path to the cloud provider configuration file; its contents are handed to the provider.")
	fs.StringVar(&o.ClusterName, "cluster-name", o.ClusterName, "The instance prefix for the cluster; providers use it to tag the resources they create.")
	fs.BoolVar(&o.AllowUntaggedCloud, "allow-untagged-cloud", o.AllowUntaggedCloud, "Allow the cluster to run without the cluster-id on cloud instances.")
	_ = fs.MarkDeprecated("allow-untagged-cloud", "This flag is deprecated and will be removed in a future release. A cluster-id will be required on cloud instances.")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, "Controllers to enable: '*' enables all on-by-default controllers, 'foo' enables foo, '-foo' disables foo. All: "+strings.Join(Names(o.known), ", ")+".")
	fs.StringVar(&o.ExternalCloudVolumePlugin, "external-cloud-volume-plugin", o.ExternalCloudVolumePlugin, "Accepted as upstream accepts it; only kube-controller-manager reads it, so it changes nothing here.")
	fs.DurationVar(&o.NodeSyncPeriod, "node-sync-period", o.NodeSyncPeriod, "Deprecated upstream no-op; see --node-monitor-period and --route-reconciliation-period.")
	_ = fs.MarkDeprecated("node-sync-period", "This flag is currently no-op and will be deleted.")

	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file; empty means in-cluster configuration (or $KUBECONFIG outside a cluster).")
	fs.StringVar(&o.Master, "master", o.Master, "The address of the Kubernetes API server (overrides any value in kubeconfig).")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "QPS to use while talking with the Kubernetes API server.")
	fs.Int32Var(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst to use while talking with the Kubernetes API server.")
	fs.StringVar(&o.KubeAPIContentType, "kube-api-content-type", o.KubeAPIContentType, "Content type of requests sent to the API server.")
	fs.DurationVar(&o.MinResyncPeriod, "min-resync-period", o.MinResyncPeriod, "The resync period of the shared caches.")
	fs.DurationVar(&o.ControllerStartInterval, "controller-start-interval", o.ControllerStartInterval, "Interval between starting controllers: after each, the leader waits a random time between the interval and twice it.")

	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader before running the control loops, so that several replicas are safe.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long non-leaders wait after the last renewal before trying to take the lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew before it gives up leading.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How long clients wait between attempts to acquire or renew the lease.")
	fs.StringVar(&o.ResourceLock, "leader-elect-resource-lock", o.ResourceLock, "The kind of lock object; only 'leases' is supported.")
	fs.StringVar(&o.LeaderElectName, "leader-elect-resource-name", o.LeaderElectName, "The name of the Lease used for leader election.")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-resource-namespace", o.LeaderElectNamespace, "The namespace of the Lease used for leader election.")
}

func (o *Options) addControllerFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.NodeMonitorPeriod, "node-monitor-period", o.NodeMonitorPeriod, "The period for checking NotReady nodes against the cloud (node lifecycle).")
	fs.DurationVar(&o.NodeStatusUpdateFrequency, "node-status-update-frequency", o.NodeStatusUpdateFrequency, "How often node addresses and labels are refreshed from the cloud.")
	fs.Int32Var(&o.ConcurrentNodeSyncs, "concurrent-node-syncs", o.ConcurrentNodeSyncs, "Workers initializing nodes concurrently (upstream default 1).")
	fs.Int32Var(&o.ConcurrentNodeStatusUpdates, "concurrent-node-status-updates", o.ConcurrentNodeStatusUpdates, "Workers refreshing node status concurrently; 0 means --concurrent-node-syncs.")
	fs.Int32Var(&o.ConcurrentServiceSyncs, "concurrent-service-syncs", o.ConcurrentServiceSyncs, "Services synchronized concurrently (upstream default 1).")
	fs.Int32Var(&o.ConcurrentNodeLifecycleSyncs, "concurrent-node-lifecycle-syncs", o.ConcurrentNodeLifecycleSyncs, "Workers checking NotReady nodes against the cloud in parallel within one --node-monitor-period (cloud-node-lifecycle-controller); deletions stay one at a time under the deletion cap.")
}

func (o *Options) addNetworkFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClusterCIDR, "cluster-cidr", o.ClusterCIDR, "CIDR range for pods: one IPv4 and/or one IPv6 CIDR, comma-separated. Scopes the routes --configure-cloud-routes programs, and is the range node IPAM allocates from.")
	fs.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", o.ServiceClusterIPRange, "CIDR range(s) for Services; never handed out as pod CIDRs.")
	fs.BoolVar(&o.AllocateNodeCIDRs, "allocate-node-cidrs", o.AllocateNodeCIDRs, "Allocate pod CIDRs to nodes from --cluster-cidr, when --controllers names node-ipam-controller (off by default, as upstream's cloud-controller-manager has no node IPAM).")
	fs.StringVar(&o.CIDRAllocatorType, "cidr-allocator-type", o.CIDRAllocatorType, "Type of CIDR allocator: RangeAllocator (node-ipam-controller allocates from --cluster-cidr, when --controllers names it) or CloudAllocator (the cloud assigns pod CIDRs; node-ipam-controller does not run).")
	fs.Int32Var(&o.NodeCIDRMaskSize, "node-cidr-mask-size", o.NodeCIDRMaskSize, "Mask size for node CIDRs in a single-stack cluster (sets the mask of the one family in use).")
	fs.Int32Var(&o.NodeCIDRMaskSizeIPv4, "node-cidr-mask-size-ipv4", o.NodeCIDRMaskSizeIPv4, "Mask size for IPv4 node CIDRs.")
	fs.Int32Var(&o.NodeCIDRMaskSizeIPv6, "node-cidr-mask-size-ipv6", o.NodeCIDRMaskSizeIPv6, "Mask size for IPv6 node CIDRs.")
	fs.BoolVar(&o.ConfigureCloudRoutes, "configure-cloud-routes", o.ConfigureCloudRoutes, "Program cloud routes for the pod CIDRs on nodes, whoever allocated them; needs --cluster-cidr.")
	fs.DurationVar(&o.RouteReconciliationPeriod, "route-reconciliation-period", o.RouteReconciliationPeriod, "The period of the full reconcile of cloud routes.")
}

func (o *Options) addStratusFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&o.CloudAPIQPS, "cloud-api-qps", o.CloudAPIQPS, "Hard ceiling on calls to the cloud provider per second, per operation class; 0 (default) sets none. Below it calls are paced adaptively from the cloud's throttling answers.")
	fs.IntVar(&o.CloudAPIBurst, "cloud-api-burst", o.CloudAPIBurst, "Burst of the --cloud-api-qps ceiling.")
	fs.BoolVar(&o.CloudExtensions, "cloud-extensions", o.CloudExtensions, "Use the provider's optional Stratus extensions (list all instances, list load balancers); false restricts Stratus to the standard cloudprovider.Interface.")
	fs.StringVar(&o.LoadBalancerClass, "load-balancer-class", o.LoadBalancerClass, "Only handle LoadBalancer Services whose spec.loadBalancerClass is unset or equals this value.")
	fs.StringVar(&o.LoadBalancerTargets, "load-balancer-targets", o.LoadBalancerTargets, "What a load balancer targets when its Service has node ports and no service.stratus.io/load-balancer-targets annotation: nodes, or endpoints (its pods, with a provider that implements endpoint targets; nodes otherwise). A Service without node ports always targets endpoints.")
	fs.BoolVar(&o.DeleteOrphanedLoadBalancers, "delete-orphaned-load-balancers", o.DeleteOrphanedLoadBalancers, "Delete load balancers owned by this cluster whose Service is gone, after --orphaned-load-balancer-grace-period.")
	fs.DurationVar(&o.OrphanedLoadBalancerGrace, "orphaned-load-balancer-grace-period", o.OrphanedLoadBalancerGrace, "How long a load balancer must stay orphaned before it is deleted.")
	fs.DurationVar(&o.OrphanedLoadBalancerInterval, "orphaned-load-balancer-check-period", o.OrphanedLoadBalancerInterval, "How often owned load balancers are listed to find orphans.")
}
