package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/ownership"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ControllerName is the controller's name, as upstream spells it; events,
// logs and the --controllers flag carry it.
const ControllerName = "cloud-node-controller"

// Watches returns the kinds the controller reads through the manager's
// shared cache (Nodes). The daemon starts and syncs their informers on
// every replica before the lease is won, so a standby that takes over
// hands this controller complete caches; a test pins it to what
// SetupWithManager really watches.
func Watches() []client.Object { return []client.Object{&corev1.Node{}} }

// Event reasons. Synced is upstream's; the warnings name why a Node stays
// uninitialized.
const (
	ReasonSynced              = "Synced"
	ReasonInstanceMetadataErr = "InstanceMetadataFailed"
	ReasonInstanceNotFound    = "InstanceNotFound"
	ReasonNilMetadata         = "NilInstanceMetadata"
	ReasonInvalidProviderID   = "InvalidProviderID"
	ReasonNoAddresses         = "NoNodeAddresses"
	ReasonInvalidNodeIP       = "InvalidProvidedNodeIP"
	ReasonUpdateFailed        = "NodeUpdateFailed"
)

// Event actions (the events.k8s.io API requires one).
const (
	actionInitialize = "Initialize"
	actionRefresh    = "Refresh"
)

// Defaults for Config fields left zero.
const (
	DefaultListInterval = 500 * time.Millisecond
	DefaultCloudTimeout = time.Minute
	// defaultBaseBackoff starts a failing Node's retries: long enough that a
	// retry usually sees a newer list answer, short enough for a node whose
	// machine is still being created.
	defaultBaseBackoff = 250 * time.Millisecond
	defaultMaxBackoff  = 5 * time.Minute
)

// Deps are the controller's collaborators: the shared ones (kit.Deps:
// Recovery retries the Nodes whose initialization the cloud failed at once
// when it answers again; Clock dates first sightings and paces the shared
// list; Ownership keeps the controller from initializing or refreshing a
// foreign Node; Explain receives each Node's initialization attempts) and
// the provider's instance interfaces.
type Deps struct {
	kit.Deps
	// Instances is the standard per-node cloud interface; required.
	Instances cloudprovider.InstancesV2
	// Lister, when set, replaces per-node InstanceMetadata calls with
	// shared ListInstances calls.
	Lister cloud.InstanceLister
}

// Config tunes the controller.
type Config struct {
	// Workers initialize Nodes concurrently (--concurrent-node-syncs).
	Workers int
	// StatusWorkers refresh initialized Nodes concurrently
	// (--concurrent-node-status-updates); 0 means Workers.
	StatusWorkers int
	// RefreshPeriod is --node-status-update-frequency; 0 disables refreshes.
	RefreshPeriod time.Duration
	// ListInterval is the least time between two ListInstances calls.
	ListInterval time.Duration
	// CloudTimeout bounds one cloud call.
	CloudTimeout time.Duration
	// BaseBackoff and MaxBackoff bound the per-Node retry delay.
	BaseBackoff, MaxBackoff time.Duration
	// ProviderIDOptional accepts metadata without a providerID. Set it only
	// when Instances is cloud.InstancesV2FromV1 over a legacy provider:
	// that adapter leaves the providerID empty only when the provider's
	// InstanceID is NotImplemented, and upstream initializes such Nodes
	// without one (addresses, labels, taint removed). From an InstancesV2
	// provider an empty providerID is an error, as upstream treats it.
	ProviderIDOptional bool
}

// Controller is the cloud-node-controller.
type Controller struct {
	client    client.Client
	instances cloudprovider.InstancesV2
	batcher   *batcher
	recorder  events.EventRecorder
	metrics   *metrics
	cfg       Config
	clock     clock.Clock
	// queue is captured when the controller starts, for recovery.
	queue     kit.Queue[reconcile.Request]
	ownership ownership.Policy

	// seen records when each uninitialized Node was first observed, so a
	// list answer is trusted for it only if the list started afterwards.
	mu   sync.Mutex
	seen map[string]time.Time
	// waiting records when each uninitialized Node was first observed and
	// is never moved by a retry, unlike seen: the waiting gauges
	// (waiting.go) report the Nodes' ages from it.
	waiting map[string]time.Time
	// outage holds the Nodes whose last sync failed because the cloud
	// did, retried at once when it recovers.
	outage kit.OutageSet[reconcile.Request]
	// written holds, per Node just initialized, the resourceVersions it
	// had before the controller's writes: a cached copy at one of them
	// predates the writes, and acting on it would repeat them.
	written map[string][]string
	// foreign holds the names of the foreign Nodes (MetricForeignNodes).
	foreign map[string]struct{}

	// limiter is the queue's per-Node backoff; each sync's outcome quotes
	// the retry it will make, for explain.
	limiter *kit.Backoff[reconcile.Request]
	explain *explain.Store
	// updateOnly is set once the API server has refused to patch a Node:
	// Nodes are then written with update (write.go).
	updateOnly atomic.Bool
}

// New builds the controller; it starts nothing.
func New(deps Deps, cfg Config) (*Controller, error) {
	shared, err := deps.Resolve(ControllerName)
	if err != nil {
		return nil, err
	}
	if deps.Instances == nil {
		return nil, errors.New("node controller: the cloud provider's InstancesV2 is required")
	}
	if cfg.Workers < 1 {
		return nil, fmt.Errorf("node controller: workers %d must be at least 1", cfg.Workers)
	}
	if cfg.StatusWorkers < 0 || cfg.RefreshPeriod < 0 {
		return nil, fmt.Errorf("node controller: status workers %d and refresh period %s must not be negative", cfg.StatusWorkers, cfg.RefreshPeriod)
	}
	if cfg.StatusWorkers == 0 {
		cfg.StatusWorkers = cfg.Workers
	}
	cfg.ListInterval = kit.OrDefault(cfg.ListInterval, DefaultListInterval)
	cfg.CloudTimeout = kit.OrDefault(cfg.CloudTimeout, DefaultCloudTimeout)
	cfg.BaseBackoff = kit.OrDefault(cfg.BaseBackoff, defaultBaseBackoff)
	cfg.MaxBackoff = kit.OrDefault(cfg.MaxBackoff, defaultMaxBackoff)
	m, err := newMetrics(shared.Registerer)
	if err != nil {
		return nil, err
	}
	clk := shared.Clock
	c := &Controller{
		client: shared.Client, instances: deps.Instances, recorder: shared.Recorder,
		metrics: m, cfg: cfg, clock: clk, seen: map[string]time.Time{}, waiting: map[string]time.Time{}, written: map[string][]string{},
		ownership: shared.Ownership, foreign: map[string]struct{}{},
		limiter: kit.NewBackoff[reconcile.Request]("per-Node", cfg.BaseBackoff, cfg.MaxBackoff),
		explain: shared.Explain,
	}
	if err := c.registerWaiting(shared.Registerer); err != nil {
		return nil, err
	}
	if deps.Lister != nil {
		c.batcher = newBatcher(deps.Lister, cfg.ListInterval, cfg.CloudTimeout, shared.Batching, m, clk)
	}
	kit.OnRecovered(shared.Recovery, c.recovered)
	return c, nil
}

// SetupWithManager adds the initializing controller and, when refreshes
// are on, the refresh loop to mgr (which may already be running).
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	h := handler.TypedFuncs[*corev1.Node, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			c.observe(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			c.observe(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*corev1.Node], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			c.forget(e.Object.Name)
			c.clearWritten(e.Object.Name)
			c.forgetForeign(e.Object.Name)
			c.explain.Forget(nodeRef(e.Object.Name))
		},
	}
	err := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(kit.Kind(mgr.GetCache(), &corev1.Node{}, h)).
		WatchesRawSource(c.queue.Source()).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: c.cfg.Workers,
			RateLimiter:             c.limiter,
		}).
		Complete(c)
	if err != nil {
		return fmt.Errorf("node controller: %w", err)
	}
	if c.cfg.RefreshPeriod > 0 {
		if err := mgr.Add(manager.RunnableFunc(c.runRefresh)); err != nil {
			return fmt.Errorf("node controller: add refresh loop: %w", err)
		}
	}
	return nil
}

// observe enqueues uninitialized Nodes only: initialized ones change often
// (heartbeats) and are the refresh loop's business. A foreign Node is
// another platform's controller's to initialize.
func (c *Controller) observe(n *corev1.Node, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if c.isForeign(n) {
		return
	}
	if !isUninitialized(n) {
		c.clearWritten(n.Name)
		return
	}
	c.firstSeen(n.Name)
	q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: n.Name}})
}

// firstSeen returns when the Node was first observed, recording now if it
// was not yet.
func (c *Controller) firstSeen(name string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.seen[name]
	if !ok {
		t = c.clock.Now()
		c.seen[name] = t
	}
	if _, ok := c.waiting[name]; !ok {
		c.waiting[name] = t
	}
	return t
}

// retryAfterNow makes the Node's next attempt wait for a list answer newer
// than the one that just failed it.
func (c *Controller) retryAfterNow(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[name] = c.clock.Now()
}

// recovered queues every Node whose initialization failed because the
// cloud did, now that it answers again: the backoff their failures built up
// during the outage (minutes, at the cap) no longer protects anything. A
// Node that failed on its own account (a providerID the provider cannot
// parse, an instance the cloud refuses to describe) keeps its backoff. The
// workers and the cloud call pacing still bound how fast they go.
func (c *Controller) recovered() {
	c.queue.Add(c.outage.Keys()...)
}

func (c *Controller) forget(name string) {
	c.outage.Forget(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.seen, name)
	delete(c.waiting, name)
}

// markWritten records the resourceVersions a Node had before this
// controller initialized it.
func (c *Controller) markWritten(name string, rvs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[name] = rvs
}

// predatesWrite reports whether a cached Node is older than the
// controller's own initialization of it: the cache has not caught up yet,
// and the watch event that brings it up to date needs no sync.
func (c *Controller) predatesWrite(n *corev1.Node) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.written[n.Name], n.ResourceVersion)
}

func (c *Controller) clearWritten(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.written, name)
}

// Reconcile implements reconcile.Reconciler: one Node's sync, whose
// outcome schedules what follows: nothing, a retry after the delay the
// cloud asked for (a RetryError), or a retry with per-Node backoff.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = explain.WithObject(kit.WithController(ctx, ControllerName), nodeRef(req.Name))
	o := c.limiter.Outcome(ctx, req, c.sync(ctx, req.Name))
	c.outage.Note(req, o)
	c.recordSync(ctx, req, o)
	return o.Reconcile()
}

// event records an event on the Node.
func (c *Controller) event(n *corev1.Node, typ, reason, action, note string, args ...any) {
	c.recorder.Eventf(n, nil, typ, reason, action, note, args...)
}

// ensure interface conformance at compile time.
var _ reconcile.Reconciler = (*Controller)(nil)

// logger returns ctx's logger with the Node.
func logger(ctx context.Context, n *corev1.Node) klog.Logger {
	return klog.FromContext(ctx).WithValues("node", klog.KObj(n))
}
