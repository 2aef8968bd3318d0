package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	discoveryv1 "k8s.io/api/discovery/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/app/leader"
	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/app/serving"
	"github.com/stratus-ccm/stratus/internal/cloudwrap"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/internal/controllers/objcache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/observe"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Deps are what main provides: the provider registry and the metrics
// registry served on /metrics.
type Deps struct {
	Providers *cloud.Registry
	// Metrics receives Stratus' metrics and is served on /metrics. The
	// controller-runtime registry is the usual choice, since its client,
	// workqueue and leader-election metrics are registered there.
	Metrics interface {
		prometheus.Registerer
		prometheus.Gatherer
	}
	// Extra are controllers a provider's own binary adds to the built-in
	// ones; --controllers enables and disables them by name like the rest.
	Extra []ExtraController
	// SkipControllerNameValidation lets one process run the daemon more
	// than once, as whole-daemon tests do (restarts, replicas side by
	// side). controller-runtime refuses a second controller of the same
	// name in a process, because its own reconcile and workqueue metrics
	// are process-wide and labelled by name. A binary runs the daemon
	// once and keeps the check: it catches an extra controller that
	// reuses a built-in controller's name.
	SkipControllerNameValidation bool
}

// Run starts the controller manager and blocks until ctx ends (nil error
// after a graceful shutdown) or something fails, including losing the
// leader lease, which returns an error so the process exits non-zero.
func Run(ctx context.Context, o *options.Options, deps Deps) error {
	log := klog.FromContext(ctx)
	p, err := plan(ctx, o, deps)
	if err != nil {
		return err
	}
	table, enabled, migration := p.table, p.enabled, p.migration
	restCfg, err := kubeConfig(o)
	if err != nil {
		return err
	}
	// Observe mode wraps the config before anything builds a client from
	// it: the manager, the informers, the provider, the controllers.
	var rec *observe.Recorder
	if o.Observe {
		if rec, err = observe.NewRecorder(deps.Metrics); err != nil {
			return err
		}
		restCfg = observeConfig(restCfg, rec)
		defer logObserveSummary(ctx, rec)
	}
	lock, stopLock, err := startLeaseLock(ctx, o, restCfg)
	if err != nil {
		return err
	}
	defer stopLock()
	mgrCtx, fence, stopFence, err := newFence(ctx, o, lock)
	if err != nil {
		return err
	}
	defer stopFence()
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	lead, err := leader.NewTracker(lock != nil, scheme, deps.Metrics, log)
	if err != nil {
		return err
	}
	mgr, err := newManager(o, restCfg, lock, lead, deps.SkipControllerNameValidation)
	if err != nil {
		return err
	}
	informerFactory, err := newInformerFactory(restCfg, o.MinResyncPeriod)
	if err != nil {
		return err
	}
	provider, err := newProvider(ctx, o, deps.Providers, p.cloudConfig, providerInputs(o, mgr, informerFactory))
	if err != nil {
		return err
	}
	explained := explain.NewStore()
	wrapped, c, err := cloudFor(provider, o, deps, explained, fence, rec)
	if err != nil {
		return err
	}
	synced := &atomic.Bool{}
	if o.ServingEnabled() {
		if err := serving.Add(ctx, mgr, o, serving.Inputs{Gatherer: deps.Metrics, Synced: synced, Lock: lock,
			Controllers: vocabulary(table), Migration: migration, Observe: rec, Explain: explained}); err != nil {
			return err
		}
	}
	if err := mgr.Add(leader.NewWarmer(mgr.GetCache(), warmKinds(enabled, table, c, o.CloudExtensions), lock, lead, synced)); err != nil {
		return fmt.Errorf("add cache warmer: %w", err)
	}
	cc := ControllerContext{Manager: mgr, Cloud: c, Options: o, ClusterName: o.ClusterName, Metrics: deps.Metrics, Explain: explained, Fence: fence}
	ids, err := newIdentities(mgr, restCfg, o.UseServiceAccountCredentials, o.Observe)
	if err != nil {
		return err
	}
	if err := mgr.Add(&controllersRunnable{cc: cc, wrapped: wrapped, enabled: enabled, starters: starters(table), restCfg: restCfg,
		informers: informerFactory, ids: ids, migration: migration, lead: lead, synced: synced,
		startInterval: o.ControllerStartInterval, wait: leader.WaitContext}); err != nil {
		return fmt.Errorf("add controllers: %w", err)
	}
	log.Info("Starting cloud controller manager", "provider", c.ProviderName(), "controllers", enabled,
		"serviceAccountCredentials", o.UseServiceAccountCredentials, "leaderElect", o.LeaderElect, "lease", o.LeaderElectNamespace+"/"+o.LeaderElectName,
		"leaderMigration", migration.String(), "observe", o.Observe)
	if err := mgr.Start(mgrCtx); err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	return gaveUp(mgrCtx)
}

// addDeletionCost has the leader mark its own pod to be replaced last
// (leader.DeletionCost), when this replica campaigns and the chart told it
// its pod's name.
func addDeletionCost(mgr manager.Manager, lock *leader.Lock, restCfg *rest.Config) error {
	if lock == nil {
		return nil
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("pod deletion cost client: %w", err)
	}
	if d := leader.NewDeletionCost(cs.CoreV1(), os.Getenv(leader.EnvPodNamespace), os.Getenv(leader.EnvPodName)); d != nil {
		if err := mgr.Add(d); err != nil {
			return fmt.Errorf("add pod deletion cost: %w", err)
		}
	}
	return nil
}

// gaveUp is the fence's refusal that ended the manager, if one did: a
// clean stop otherwise.
func gaveUp(mgrCtx context.Context) error {
	if cause := context.Cause(mgrCtx); errors.Is(cause, cloudwrap.ErrNotLeader) {
		return fmt.Errorf("gave up leadership: %w", cause)
	}
	return nil
}

// newFence is the fence of this replica's cloud mutations and controller
// writes, over the lease lock's renewals, and the context to run the
// manager under: the fence's first refusal cancels it, which gives up
// leadership, and Run then returns the refusal so that the process exits
// non-zero as on a lost lease. Without a lock (no leader election, observe
// mode) the fence is nil, open. Its margin is the lease duration minus the
// renew deadline: the fence stays open for the renew deadline after a
// renewal was sent, the time client-go's elector itself keeps trying
// before it gives up, and closes a margin (2 s of 6 s, 5 s of upstream's
// 15 s) before another replica can take the lease.
func newFence(ctx context.Context, o *options.Options, lock *leader.Lock) (context.Context, *cloudwrap.Fence, func(), error) {
	mgrCtx, giveUp := context.WithCancelCause(ctx)
	if lock == nil {
		return mgrCtx, nil, func() { giveUp(nil) }, nil
	}
	f, err := cloudwrap.NewFence(cloudwrap.FenceOptions{Lease: lock, LeaseDuration: o.LeaseDuration,
		Margin: o.LeaseDuration - o.RenewDeadline, GiveUp: giveUp})
	if err != nil {
		giveUp(nil)
		return nil, nil, nil, fmt.Errorf("--leader-elect-lease-duration=%s --leader-elect-renew-deadline=%s: %w", o.LeaseDuration, o.RenewDeadline, err)
	}
	return mgrCtx, f, func() { giveUp(nil) }, nil
}

// cloudFor wraps the provider as the controllers call it: instrumented
// and paced (wrapped, through which the daemon also hears of the first
// call), with its mutations fenced when the replica campaigns.
func cloudFor(provider cloudprovider.Interface, o *options.Options, deps Deps, explained *explain.Store, fence *cloudwrap.Fence,
	rec *observe.Recorder) (*cloudwrap.Cloud, cloud.Cloud, error) {
	wrapped, err := cloudwrap.Instrument(provider, cloudwrap.Options{QPS: o.CloudAPIQPS, Burst: o.CloudAPIBurst, Registerer: deps.Metrics,
		OnCall: explained.CloudCall, OnPaced: explained.Paced})
	if err != nil {
		return nil, nil, err
	}
	if rec != nil {
		// Observe mode stands outside the wrapper: the controllers get a
		// cloud whose mutating calls are planned, and cannot tell.
		return wrapped, observe.NewCloud(wrapped, rec, wrapped.CountRefused), nil
	}
	return wrapped, cloudwrap.WithFence(wrapped, fence), nil
}

// runPlan is what Run settles before it talks to anything: the controller
// table, the controllers enabled, the leader migration plan and the cloud
// config's contents.
type runPlan struct {
	table       []controllerEntry
	enabled     []string
	migration   *options.MigrationPlan
	cloudConfig []byte
}

// plan checks the flags and the provider's cloud config, all errors at
// once and before anything seeks the lease, and settles what runs.
func plan(ctx context.Context, o *options.Options, deps Deps) (*runPlan, error) {
	table, err := controllerTable(deps)
	if err != nil {
		return nil, err
	}
	cloudConfig, configErr := readCloudConfig(o)
	if configErr == nil {
		configErr = checkCloudConfig(o, deps.Providers, cloudConfig)
	}
	if err := errors.Join(o.ValidateFor(vocabulary(table)), configErr); err != nil {
		return nil, err
	}
	for _, w := range o.Warnings() {
		klog.FromContext(ctx).Info("Warning: flag has no effect", "reason", w)
	}
	enabled, err := options.ResolveControllers(o.Controllers, vocabulary(table))
	if err != nil {
		return nil, err
	}
	if o.AllocateNodeCIDRs && !slices.Contains(enabled, nodeipam.ControllerName) {
		// Upstream's manager has no node IPAM and ignores the flag without
		// a word; manifests carry it for kube-controller-manager's
		// allocator, or expecting Stratus to allocate.
		klog.FromContext(ctx).Info("Warning: flag has no effect", "reason",
			"--allocate-node-cidrs=true: this process allocates no pod CIDRs, as node IPAM runs only when --controllers names it (--controllers=*,"+nodeipam.ControllerName+")")
	}
	migration, err := options.LoadMigration(o, vocabulary(table))
	if err != nil {
		return nil, err
	}
	return &runPlan{table: table, enabled: enabled, migration: migration, cloudConfig: cloudConfig}, nil
}

// startLeaseLock builds the observed Lease lock and starts its watch, when
// this replica campaigns (leader election on, not observe mode); stop ends
// the watch and the lock's event broadcaster. Without one, lock is nil.
func startLeaseLock(ctx context.Context, o *options.Options, restCfg *rest.Config) (*leader.Lock, func(), error) {
	if !o.LeaderElect || o.Observe {
		warnIfLeaseHeld(ctx, o, restCfg)
		return nil, func() {}, nil
	}
	l, stopEvents, err := leader.NewLeaseLock(o, restCfg)
	if err != nil {
		return nil, nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); l.Watch(watchCtx) }()
	return l, func() { stopWatch(); <-watched; stopEvents() }, nil
}

func kubeConfig(o *options.Options) (*rest.Config, error) {
	path := o.KubeconfigPath()
	if path == "" && o.Master == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return tuneKubeConfig(o, cfg), nil
		} else if errors.Is(err, rest.ErrNotInCluster) {
			return nil, errNoKubeconfig
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags(o.Master, path)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig=%s --master=%s: %w", path, o.Master, err)
	}
	return tuneKubeConfig(o, cfg), nil
}

func tuneKubeConfig(o *options.Options, cfg *rest.Config) *rest.Config {
	cfg.QPS = o.KubeAPIQPS
	cfg.Burst = int(o.KubeAPIBurst)
	cfg.ContentType = o.KubeAPIContentType
	cfg.UserAgent = options.UserAgent
	return cfg
}

// readCloudConfig reads the --cloud-config file once, for the provider's
// config check before anything starts and for its construction after; nil
// without the flag.
func readCloudConfig(o *options.Options) ([]byte, error) {
	if o.CloudConfig == "" {
		return nil, nil
	}
	data, err := os.ReadFile(o.CloudConfig)
	if err != nil {
		return nil, fmt.Errorf("--cloud-config=%s: %w", o.CloudConfig, err)
	}
	return data, nil
}

// configReader is the provider's view of the cloud config: nil without
// the flag, as upstream hands it.
func configReader(data []byte) io.Reader {
	if data == nil {
		return nil
	}
	return bytes.NewReader(data)
}

// checkCloudConfig runs the provider's config check, when it has one, on
// the --cloud-config contents.
func checkCloudConfig(o *options.Options, reg *cloud.Registry, data []byte) error {
	if reg == nil || o.CloudProvider == "" {
		return nil
	}
	if err := reg.CheckConfig(o.CloudProvider, configReader(data)); err != nil {
		return fmt.Errorf("--cloud-config=%s: %w", o.CloudConfig, err)
	}
	return nil
}

// newProvider builds the provider from the --cloud-config contents and the
// other inputs. A provider without a cluster ID starts, as under upstream's
// app, which never checks (only its sample main refuses one): DigitalOcean's
// always reports none, and its published arguments have no
// --allow-untagged-cloud. Without that flag a warning says so.
func newProvider(ctx context.Context, o *options.Options, reg *cloud.Registry, data []byte, in cloud.Inputs) (cloudprovider.Interface, error) {
	if reg == nil {
		reg = cloud.NewRegistry()
	}
	in.Name, in.Config = o.CloudProvider, configReader(data)
	p, err := reg.Build(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("--cloud-provider=%s: %w", o.CloudProvider, err)
	}
	if !p.HasClusterID() && !o.AllowUntaggedCloud {
		klog.FromContext(ctx).Info("Warning: the cloud provider reports no cluster ID; load balancers and routes may not be scoped to this cluster (--allow-untagged-cloud silences this)",
			"cloudProvider", o.CloudProvider)
	}
	return p, nil
}

func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	return scheme, nil
}

// newManager builds the controller manager; with lead set, its cache
// reports every informer start to it and the manager uses its scheme.
// skipNames is Deps.SkipControllerNameValidation.
func newManager(o *options.Options, restCfg *rest.Config, lock *leader.Lock, lead *leader.Tracker, skipNames bool) (manager.Manager, error) {
	var newCache cache.NewCacheFunc
	var scheme *runtime.Scheme
	if lead != nil {
		newCache, scheme = lead.NewCache, lead.Scheme()
	} else {
		var err error
		if scheme, err = newScheme(); err != nil {
			return nil, err
		}
	}
	opts, err := objcache.ManagerOptions(scheme, skipNames)
	if err != nil {
		return nil, err
	}
	opts.NewCache = newCache
	opts.Logger = managerLogger(klog.Background())
	// Observe mode takes no lease: it must not displace the controller
	// manager in charge, and it changes nothing anyway.
	opts.LeaderElection = o.LeaderElect && !o.Observe
	opts.LeaderElectionResourceLock = "leases"
	opts.LeaderElectionID = o.LeaderElectName
	opts.LeaderElectionNamespace = o.LeaderElectNamespace
	opts.LeaseDuration = ptr.To(o.LeaseDuration)
	opts.RenewDeadline = ptr.To(o.RenewDeadline)
	opts.RetryPeriod = ptr.To(o.RetryPeriod)
	opts.LeaderElectionReleaseOnCancel = true
	// Lease requests are observed for /readyz (internal/app/leader).
	opts.LeaderElectionResourceLockInterface = resourceLockOrNil(lock)
	opts.GracefulShutdownTimeout = ptr.To(30 * time.Second)
	opts.Cache.SyncPeriod = ptr.To(o.MinResyncPeriod)
	mgr, err := manager.New(restCfg, opts)
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	if err := addDeletionCost(mgr, lock, restCfg); err != nil {
		return nil, err
	}
	return mgr, nil
}

// resourceLockOrNil keeps a nil *leader.Lock from becoming a non-nil
// interface that the manager would try to use.
func resourceLockOrNil(l *leader.Lock) resourcelock.Interface {
	if l == nil {
		return nil
	}
	return l
}

// controllerStartJitter is upstream's ControllerStartJitter.
const controllerStartJitter = 1.0

// controllersRunnable runs on the leader only: it initializes the provider
// and then starts the enabled controllers, in upstream's order, so that a
// provider's Initialize (which may start housekeeping of its own) never runs
// on a standby.
type controllersRunnable struct {
	cc ControllerContext
	// wrapped is the instrumented cloud under cc.Cloud (which observe mode
	// may decorate): it reports the first call after winning the lease.
	wrapped   *cloudwrap.Cloud
	enabled   []string
	starters  map[string]StartFunc
	restCfg   *rest.Config
	informers informers.SharedInformerFactory
	// ids gives each controller its own API identity; nil leaves
	// cc.NewClients as it is.
	ids *identities
	// migration, when set, moves some controllers under the migration
	// lease (upstream's leader migration); nil runs all under the main one.
	migration *options.MigrationPlan
	// startInterval is --controller-start-interval: after each controller
	// starts, wait a jittered [d, 2d) through wait, as upstream does.
	startInterval time.Duration
	wait          func(ctx context.Context, d time.Duration) error
	// lead, when set, is told when the lease is won, when the controllers
	// have started and when the first cloud call goes out.
	lead   *leader.Tracker
	synced *atomic.Bool
}

func (r *controllersRunnable) NeedLeaderElection() bool { return true }

func (r *controllersRunnable) Start(ctx context.Context) error {
	log := klog.FromContext(ctx)
	var since time.Time
	if r.lead != nil {
		since = r.lead.BecameLeader(ctx, r.synced != nil && r.synced.Load())
		r.wrapped.NotifyNextCall(func(ctx context.Context, op string) { r.lead.FirstCloudCall(ctx, op) })
	}
	if r.ids != nil {
		defer r.ids.shutdown()
		r.cc.NewClients = func(name string) (Clients, error) {
			return r.ids.forController(klog.NewContext(ctx, log.WithValues("controller", name)), name)
		}
	}
	r.cc.Cloud.Initialize(newClientBuilder(r.restCfg).withServiceAccounts(ctx, r.ids), ctx.Done())
	// Upstream hands the provider the shared informers right after
	// Initialize; providers written for it (InformerUser) rely on that.
	if u, ok := r.cc.Cloud.Unwrap().(cloudprovider.InformerUser); ok {
		u.SetInformers(r.informers)
	}
	mainSet, migrated, unowned := r.migration.Split(r.enabled)
	if len(unowned) > 0 {
		log.Info("Leader migration: controllers left to the other component", "controllers", unowned)
	}
	defer r.informers.Shutdown()
	if err := r.start(ctx, mainSet); err != nil {
		return err
	}
	if r.lead != nil {
		r.lead.ControllersStarted(ctx, since)
	}
	if r.migration != nil {
		// As upstream: the migration lease is tried only once the main one
		// is held, and its controllers start only under it.
		return leader.RunMigrationLease(ctx, r.restCfg, r.cc.Options, r.migration, func(ctx context.Context) error {
			return r.start(ctx, migrated)
		})
	}
	<-ctx.Done()
	return nil
}

// start runs the start functions of the named controllers, then the
// informers they asked for.
func (r *controllersRunnable) start(ctx context.Context, names []string) error {
	log := klog.FromContext(ctx)
	var errs []error
	for _, name := range names {
		start, ok := r.starters[name]
		if !ok {
			log.Info("Controller not available in this build", "controller", name)
			continue
		}
		started, reason, err := start(klog.NewContext(ctx, log.WithValues("controller", name)), r.cc)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("start %s: %w", name, err))
		case !started:
			log.Info("Controller skipped", "controller", name, "reason", reason)
		default:
			log.Info("Controller started", "controller", name)
			if r.startInterval > 0 {
				if err := r.wait(ctx, wait.Jitter(r.startInterval, controllerStartJitter)); err != nil {
					return nil // shutting down before all controllers started is not a failure
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Started last, as upstream does, so every informer the provider or a
	// controller asked for is started here; one nobody asked for costs
	// nothing. A second call (the migrated controllers) starts only the
	// informers added since.
	r.informers.Start(ctx.Done())
	return nil
}

// errNoKubeconfig explains what to give when no API server can be found.
var errNoKubeconfig = errors.New("no API server configuration: not in a cluster, and neither --kubeconfig, --master nor $KUBECONFIG is set")

// warmKinds are the kinds a standby fills before it leads: the enabled
// controllers' watches, and EndpointSlices when the service controller
// will watch them, with the provider's endpoint-target extension
// (service.Watches cannot know).
func warmKinds(enabled []string, table []controllerEntry, c cloud.Cloud, extensions bool) []client.Object {
	kinds := kindsFor(enabled, table)
	if _, ok := c.EndpointTargeter(); ok && extensions && slices.Contains(enabled, service.ControllerName) {
		kinds = append(kinds, &discoveryv1.EndpointSlice{})
	}
	return kinds
}
