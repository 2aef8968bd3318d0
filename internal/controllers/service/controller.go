package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ControllerName is the controller's name, as upstream spells it; events,
// logs, the field manager of its writes and the --controllers flag carry it.
const ControllerName = "service-lb-controller"

// Watches returns the kinds the controller reads through the manager's
// shared cache (Nodes and Services). The daemon starts and syncs their informers on
// every replica before the lease is won, so a standby that takes over
// hands this controller complete caches; a test pins it to what
// SetupWithManager really watches.
func Watches() []client.Object { return []client.Object{&corev1.Node{}, &corev1.Service{}} }

// Defaults of Config.
const (
	// DefaultWorkers: Services are independent, so syncs run in parallel;
	// the cloud's rate limit, not the worker count, should bound a burst.
	DefaultWorkers = 10
	// DefaultNodeSyncDelay is the quiet period of node changes: a change
	// after it updates the load balancers at once; changes closer together
	// are a burst (autoscaler, rolling upgrade), whose pass waits until the
	// changes have stopped for a quarter of it and no node is still being
	// initialized, at most five times it (see nodePacer). One update per
	// load balancer per burst is what a cloud's rate limit can afford.
	DefaultNodeSyncDelay = time.Second
	// DefaultMinRetryDelay and DefaultMaxRetryDelay bound the per-Service
	// exponential backoff after errors (upstream's values).
	DefaultMinRetryDelay = 5 * time.Second
	DefaultMaxRetryDelay = 300 * time.Second
	// DefaultOrphanInterval is the period of the orphan collector.
	DefaultOrphanInterval = 5 * time.Minute
)

// Config tunes the controller. Zero values take the defaults above.
type Config struct {
	// ClusterName is passed to every LoadBalancer call.
	ClusterName string
	// LoadBalancerClass: Services whose spec.loadBalancerClass is unset or
	// equal to it are handled; empty handles only Services without a class.
	LoadBalancerClass string
	// EndpointTargetsByDefault gives a Service with node ports and without
	// the targets annotation endpoint targets, where the provider can
	// (--load-balancer-targets=endpoints); its annotation "nodes" opts out.
	EndpointTargetsByDefault bool
	Workers                  int
	NodeSyncDelay            time.Duration
	MinRetryDelay            time.Duration
	MaxRetryDelay            time.Duration

	// DeleteOrphans deletes orphaned load balancers after OrphanGrace;
	// otherwise they are only reported. Orphans are looked for every
	// OrphanInterval when Deps.Lister is set.
	DeleteOrphans  bool
	OrphanGrace    time.Duration
	OrphanInterval time.Duration

	// NoConditions leaves the Service's conditions alone. The daemon sets
	// it in observe mode, where writing them would plan a change of
	// Stratus' own making rather than one the controller manager in
	// charge would see.
	NoConditions bool
}

// Deps are the controller's collaborators: the shared ones (kit.Deps:
// Recovery retries the Services whose sync failed at once when the cloud
// answers again; Clock paces node syncs and dates orphans; Ownership
// keeps a foreign Node out of the backends unless ForeignBackends;
// Explain receives each Service's syncs and answers what the controller
// knows of a Service or a Node) and the provider's load balancer API.
type Deps struct {
	kit.Deps
	// APIReader reads Services from the API server, past the cache: an
	// orphan is deleted only after a live read confirms it. Required with
	// Lister.
	APIReader client.Reader
	// LoadBalancer is the cloud's load balancer API; required.
	LoadBalancer cloudprovider.LoadBalancer
	// Lister, when set, enables the orphan collector.
	Lister cloud.LoadBalancerLister
	// Annotations, when set, names the annotations under the provider's
	// prefix it does not read; each sync warns about them on the Service.
	Annotations cloud.AnnotationChecker
	// Families, when set, names the IP families the provider's load
	// balancers serve; each ensure checks the Service's against them
	// (families.go).
	Families cloud.IPFamilyLister
	// ForeignBackends puts foreign Nodes in load balancers (backends.go).
	ForeignBackends bool
	// Endpoints, when set, is the provider's endpoint-target extension:
	// the controller then watches EndpointSlices and gives the Services
	// that need or ask for endpoint targets load balancers that target
	// their endpoints (endpoints.go).
	Endpoints cloud.EndpointTargeter
}

// key is one work item: a Service, or one of the two passes that concern
// every load balancer. The passes are single keys, so that any number of
// triggers while one is pending cost one pass.
type key struct {
	// Service names the Service to sync; zero for a pass.
	Service types.NamespacedName
	// Pass names the pass; empty for a Service.
	Pass string
}

var (
	// nodesKey: the node set changed; update the load balancers whose
	// node set differs.
	nodesKey = key{Pass: "nodes"}
	// orphansKey: look for load balancers whose Service is gone.
	orphansKey = key{Pass: "orphans"}
)

func serviceKey(svc *corev1.Service) key {
	return key{Service: types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}}
}

// Controller is the service-lb-controller.
type Controller struct {
	cfg       Config
	client    client.Client
	apiReader client.Reader
	lb        cloudprovider.LoadBalancer
	lister    cloud.LoadBalancerLister
	annots    cloud.AnnotationChecker
	families  []corev1.IPFamily
	endpoints cloud.EndpointTargeter
	events    events.EventRecorder
	metrics   *metrics
	now       func() time.Time
	nodePacer *nodePacer
	epPacer   *endpointPacer
	// slowStart lets the workers in one sync first, then doubling: a new
	// leader's first load balancer is not queued behind every worker's
	// lookup.
	slowStart *kit.SlowStart

	nodes *nodeTracker
	// seedOnce guards seedNodes: the first sync's check of the node set
	// against the cache.
	seedOnce sync.Once
	state    *stateStore
	orphans  *orphanTracker
	// driftRepaired breaks the repair loop of a provider that leaves
	// nodes out of its load balancers (drift.go).
	driftRepaired driftMemo
	// outage holds the Services whose last sync failed because the cloud
	// did, retried at once when it recovers.
	outage *kit.OutageSet[key]
	// phases counts the load balancers by phase (health.go).
	phases *phaseTracker
	// queue is captured when the controller starts, for the node pass,
	// drift and recovery.
	queue kit.Queue[key]
	// limiter is the queue's per-Service backoff; each sync's outcome
	// quotes the retry it will make, for the conditions and explain.
	limiter *kit.Backoff[key]
	explain *explain.Store
	// firstWaits leaves a new load balancer's first provisioning answer
	// unwritten (conditions.go).
	firstWaits firstWaits
}

// New builds a controller; it starts nothing (SetupWithManager does).
func New(d Deps, cfg Config) (*Controller, error) {
	shared, err := d.Resolve(ControllerName)
	switch {
	case err != nil:
		return nil, err
	case d.LoadBalancer == nil:
		return nil, errors.New("service controller: LoadBalancer is required")
	case d.Lister != nil && d.APIReader == nil:
		return nil, errors.New("service controller: APIReader is required with Lister, to confirm orphans")
	}
	cfg = withDefaults(cfg)
	if cfg.MinRetryDelay > cfg.MaxRetryDelay {
		return nil, fmt.Errorf("service controller: min retry delay %v exceeds max %v", cfg.MinRetryDelay, cfg.MaxRetryDelay)
	}
	families, err := declaredFamilies(d.Families)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(shared.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		cfg: cfg, client: shared.Client, apiReader: d.APIReader,
		lb: d.LoadBalancer, lister: d.Lister, annots: d.Annotations, families: families, endpoints: d.Endpoints,
		events: shared.Recorder, metrics: m, now: shared.Clock.Now,
		nodePacer: newNodePacer(cfg.NodeSyncDelay, shared.Batching),
		epPacer:   newEndpointPacer(cfg.NodeSyncDelay),
		slowStart: kit.NewSlowStart(cfg.Workers, kit.DefaultSlowStartWindow, shared.Clock.Now),
		nodes:     newNodeTracker(), state: newStateStore(), orphans: newOrphanTracker(), outage: &kit.OutageSet[key]{},
		phases:  newPhaseTracker(m.lbs),
		limiter: kit.NewBackoff[key]("per-Service", cfg.MinRetryDelay, cfg.MaxRetryDelay),
		explain: shared.Explain,
	}
	c.nodes.backend = backendPolicy(shared.Ownership, d.ForeignBackends)
	c.nodes.now = c.now
	kit.OnRecovered(shared.Recovery, c.retryFailed)
	shared.Explain.Describe(explain.KindService, ControllerName, c.describeService)
	shared.Explain.Describe(explain.KindNode, ControllerName, c.describeNode)
	return c, nil
}

// firstKeys are the passes queued when the controller starts: the first
// orphan pass, when the provider can list load balancers.
func (c *Controller) firstKeys() []key {
	if c.lister == nil {
		return nil
	}
	return []key{orphansKey}
}

func withDefaults(cfg Config) Config {
	cfg.Workers = kit.OrDefault(cfg.Workers, DefaultWorkers)
	cfg.NodeSyncDelay = kit.OrDefault(cfg.NodeSyncDelay, DefaultNodeSyncDelay)
	cfg.MinRetryDelay = kit.OrDefault(cfg.MinRetryDelay, DefaultMinRetryDelay)
	cfg.MaxRetryDelay = kit.OrDefault(cfg.MaxRetryDelay, DefaultMaxRetryDelay)
	cfg.OrphanInterval = kit.OrDefault(cfg.OrphanInterval, DefaultOrphanInterval)
	cfg.OrphanGrace = max(cfg.OrphanGrace, 0)
	return cfg
}

// SetupWithManager adds the controller to mgr; it may be called after the
// manager has started. The workers start once both caches have synced and
// the handlers have seen every existing Node and Service, so that the
// first syncs see every node: a load balancer created with half the nodes
// would need a second call at once.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	b := builder.TypedControllerManagedBy[key](mgr).
		Named(ControllerName).
		// The node pass queues Services itself, through the captured
		// queue; the first orphan pass runs at start and each schedules
		// the next.
		WatchesRawSource(c.queue.Source(c.firstKeys()...)).
		// Nodes first: their replay of existing objects starts first too.
		WatchesRawSource(kit.Kind(mgr.GetCache(), &corev1.Node{}, c.nodeHandler())).
		WatchesRawSource(kit.Kind(mgr.GetCache(), &corev1.Service{}, c.serviceHandler()))
	if c.endpoints != nil {
		// Only with the extension: a provider without it has no use for
		// endpoints, and its operators' RBAC need not grant them.
		b = b.WatchesRawSource(kit.Kind(mgr.GetCache(), &discoveryv1.EndpointSlice{}, c.sliceHandler()))
	}
	err := b.WithOptions(controller.TypedOptions[key]{
		MaxConcurrentReconciles: c.cfg.Workers,
		RateLimiter:             c.limiter,
	}).
		WithLogConstructor(logConstructor(mgr.GetLogger())).
		Complete(c)
	if err != nil {
		return fmt.Errorf("service controller: set up: %w", err)
	}
	// The slow start counts from the start of leadership: the controller
	// starts then too, so Services created long after find the pool open.
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		c.slowStart.Begin()
		<-ctx.Done()
		return nil
	}))
	if err != nil {
		return fmt.Errorf("service controller: set up: %w", err)
	}
	mgr.GetLogger().V(2).Info("Service controller set up", "controller", ControllerName, "workers", c.cfg.Workers,
		"loadBalancerClass", c.cfg.LoadBalancerClass, "orphanCollector", c.lister != nil, "deleteOrphans", c.cfg.DeleteOrphans,
		"endpointTargets", c.endpoints != nil)
	return nil
}

// logConstructor names the Service or the pass in every log line of a
// reconcile.
func logConstructor(base logr.Logger) func(*key) logr.Logger {
	base = base.WithValues("controller", ControllerName)
	return func(k *key) logr.Logger {
		switch {
		case k == nil:
			return base
		case k.Pass != "":
			return base.WithValues("pass", k.Pass)
		default:
			return base.WithValues("service", klog.KRef(k.Service.Namespace, k.Service.Name))
		}
	}
}

// Reconcile implements reconcile.TypedReconciler: a pass, or one Service's
// sync, whose result schedules what follows: nothing, a retry after the
// delay the cloud asked for, or (on error) a retry with per-Service
// exponential backoff. The queue never hands the same key to two workers,
// so a Service's syncs never overlap; other Services proceed.
func (c *Controller) Reconcile(ctx context.Context, k key) (reconcile.Result, error) {
	ctx = kit.WithController(ctx, ControllerName)
	switch k {
	case nodesKey:
		if d := c.nodePacer.wait(c.now()); d > 0 {
			// A burst is still under way; its last change decides.
			return reconcile.Result{RequeueAfter: d}, nil
		}
		if q, ok := c.queue.Get(); ok {
			c.nodePass(ctx, q)
		}
		return reconcile.Result{}, nil
	case orphansKey:
		if err := c.collectOrphans(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Looking for orphaned load balancers failed; will try again", "after", c.cfg.OrphanInterval)
		}
		return reconcile.Result{RequeueAfter: c.cfg.OrphanInterval}, nil
	}
	ctx = explain.WithObject(ctx, serviceRef(k.Service))
	end, err := c.slowStart.Enter(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	defer end()
	c.state.takeWritten(k.Service) // a previous sync's answer is no news to this one
	start := c.now()
	err = c.sync(ctx, k.Service)
	c.metrics.syncDuration.Observe(c.now().Sub(start).Seconds())
	// One outcome feeds everything that follows: the conditions and
	// explain quote the retry the queue will make.
	o := c.limiter.Outcome(ctx, k, err)
	c.report(ctx, k.Service, o)
	c.outage.Note(k, o)
	c.phases.set(k.Service, c.phaseAfter(k.Service, o))
	c.metrics.syncs.WithLabelValues(o.Result).Inc()
	return o.Reconcile()
}
