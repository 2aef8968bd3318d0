package route

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
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
)

// ControllerName is the upstream name of this controller.
const ControllerName = "node-route-controller"

// Watches returns the kinds the controller reads through the manager's
// shared cache (Nodes). The daemon starts and syncs their informers on
// every replica before the lease is won, so a standby that takes over
// hands this controller complete caches; a test pins it to what
// SetupWithManager really watches.
func Watches() []client.Object { return []client.Object{&corev1.Node{}} }

// Event reasons and condition reasons, as upstream spells them.
const (
	ReasonFailedToCreateRoute = "FailedToCreateRoute"
	ConditionRouteCreated     = "RouteCreated"
	ConditionNoRouteCreated   = "NoRouteCreated"
	eventAction               = "CreateRoute"
)

// Defaults.
const (
	DefaultReconcilePeriod = 10 * time.Second
	DefaultConcurrency     = 10
	DefaultCoalesce        = 500 * time.Millisecond
	DefaultMaxBackoff      = 5 * time.Minute
	// defaultPassRetry is the first retry of a failed pass; later ones
	// double up to the reconcile period.
	defaultPassRetry = time.Second
)

// pass is the controller's one work item: every pass covers the whole
// table, so concurrent Node events collapse into one pending pass.
type pass struct{}

// Config is the controller's configuration.
type Config struct {
	// ClusterName selects the cloud route table.
	ClusterName string
	// ClusterCIDRs bound the routes this controller considers its own.
	ClusterCIDRs []netip.Prefix
	// ReconcilePeriod is the longest time between two full passes.
	ReconcilePeriod time.Duration
	// Concurrency bounds parallel cloud calls within a pass.
	Concurrency int
	// Coalesce delays a pass after a Node event so that a burst of events
	// costs one pass.
	Coalesce time.Duration
	// MaxBackoff caps the delay before a failed creation is retried; the
	// first retry waits one ReconcilePeriod.
	MaxBackoff time.Duration
}

// Deps are the controller's collaborators: the shared ones (kit.Deps:
// Recovery runs a pass at once, without the routes' backoff, when the
// cloud answers again; Clock dates conditions and paces retries;
// Ownership leaves foreign Nodes unrouted; Explain receives each routable
// Node's routes after every pass) and the cloud's route API.
type Deps struct {
	kit.Deps
	// Routes is the cloud's route API; required.
	Routes cloudprovider.Routes
}

// Controller reconciles cloud routes with Nodes' pod CIDRs.
type Controller struct {
	client   client.Client
	routes   cloudprovider.Routes
	recorder events.EventRecorder
	cfg      Config
	clock    clock.Clock
	m        *metrics
	backoff  *backoff
	// passOutage: the last pass failed because the cloud did (listing
	// the routes, say); a recovery runs the next one at once.
	passOutage atomic.Bool
	// limiter is the pass's backoff in the queue after a failed pass, and
	// its resync after a good one.
	limiter *kit.Backoff[pass]
	// queue is captured when the controller starts, for recovery.
	queue kit.Queue[pass]
	// ownership leaves foreign Nodes out of every pass.
	ownership ownership.Policy
	// foreign are the foreign Nodes whose stale condition was handled.
	foreign *foreignNodes
	explain *explain.Store
	// states is the last pass's routes per Node, for explain.
	states *routeStates
	// nodeChanged is set by a Node event that queued a pass, and taken by
	// the pass: the trigger label of upstream's route_sync_total.
	nodeChanged atomic.Bool
}

// New validates cfg and builds the controller. It has no side effects
// beyond registering metrics.
func New(deps Deps, cfg Config) (*Controller, error) {
	shared, err := deps.Resolve(ControllerName)
	if err != nil {
		return nil, err
	}
	if deps.Routes == nil {
		return nil, errors.New("route controller: the cloud provider's Routes is required")
	}
	if len(cfg.ClusterCIDRs) == 0 {
		return nil, errors.New("route controller: at least one cluster CIDR is required to tell this cluster's routes apart")
	}
	cfg.ReconcilePeriod = kit.OrDefault(cfg.ReconcilePeriod, DefaultReconcilePeriod)
	cfg.Concurrency = kit.OrDefault(cfg.Concurrency, DefaultConcurrency)
	if cfg.Coalesce < 0 {
		cfg.Coalesce = 0
	} else if cfg.Coalesce == 0 {
		cfg.Coalesce = DefaultCoalesce
	}
	if cfg.MaxBackoff < cfg.ReconcilePeriod {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.ReconcilePeriod)
	}
	m, err := newMetrics(shared.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client: shared.Client, routes: deps.Routes, recorder: shared.Recorder, cfg: cfg, m: m,
		backoff: newBackoff(cfg.ReconcilePeriod, cfg.MaxBackoff), clock: shared.Clock, ownership: shared.Ownership,
		explain: shared.Explain, states: &routeStates{nodes: map[string]routeState{}}, foreign: &foreignNodes{seen: map[string]types.UID{}},
		limiter: kit.NewBackoff[pass]("route pass", defaultPassRetry, cfg.ReconcilePeriod).Resyncing(cfg.ReconcilePeriod),
	}
	shared.Explain.Describe(explain.KindNode, ControllerName, c.describe)
	kit.OnRecovered(shared.Recovery, c.recovered)
	return c, nil
}

// recovered runs a pass now that the cloud answers again, when the last
// pass or a route failed because the cloud did, with those routes' backoff
// forgotten: the failures it counted were the outage's. Routes the cloud
// refused on their own account keep theirs, and a pass that failed on its
// own (not the cloud's) error waits for its retry.
func (c *Controller) recovered() {
	routes := c.backoff.resetOutage()
	if c.passOutage.Load() || routes {
		c.queue.Add(pass{})
	}
}

// SetupWithManager adds the controller to mgr; it may be called after the
// manager has started.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	err := builder.TypedControllerManagedBy[pass](mgr).
		Named(ControllerName).
		WatchesRawSource(kit.Kind(mgr.GetCache(), &corev1.Node{}, c.nodeHandler())).
		// The first pass must run even in a cluster without Nodes, to delete
		// stale routes; later passes are scheduled by RequeueAfter.
		WatchesRawSource(c.queue.Source(pass{})).
		WithOptions(controller.TypedOptions[pass]{
			MaxConcurrentReconciles: 1,
			RateLimiter:             c.limiter,
		}).
		Complete(c)
	if err != nil {
		return fmt.Errorf("route controller: set up: %w", err)
	}
	return nil
}

// nodeHandler schedules a pass, after the coalescing delay, for the Node
// events that can change the routes.
func (c *Controller) nodeHandler() handler.TypedEventHandler[*corev1.Node, pass] {
	enqueue := func(q workqueue.TypedRateLimitingInterface[pass]) {
		c.nodeChanged.Store(true)
		q.AddAfter(pass{}, c.cfg.Coalesce)
	}
	return handler.TypedFuncs[*corev1.Node, pass]{
		CreateFunc: func(_ context.Context, _ event.TypedCreateEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[pass]) {
			enqueue(q)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[pass]) {
			c.forgetNode(e.Object.Name)
			enqueue(q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[pass]) {
			if routesMayChange(e.ObjectOld, e.ObjectNew) {
				enqueue(q)
			}
		},
	}
}

// routesMayChange is true when an update touches what routes derive from.
func routesMayChange(old, cur *corev1.Node) bool {
	return !slices.Equal(old.Spec.PodCIDRs, cur.Spec.PodCIDRs) ||
		old.Spec.ProviderID != cur.Spec.ProviderID ||
		old.UID != cur.UID ||
		!slices.Equal(old.Status.Addresses, cur.Status.Addresses) ||
		old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero()
}

// Reconcile implements reconcile.TypedReconciler: one full pass, then the next
// one a period later at the latest. A pass the cloud asked to retry later
// (a RetryError) runs again after the delay it named, without counting as
// a failure; any other error retries with backoff.
func (c *Controller) Reconcile(ctx context.Context, p pass) (reconcile.Result, error) {
	ctx = kit.WithController(ctx, ControllerName)
	trigger := triggerPeriodic
	if c.nodeChanged.Swap(false) {
		trigger = triggerNodeChange
	}
	changed, err := c.sync(ctx, p)
	o := c.limiter.Outcome(ctx, p, err)
	c.passOutage.Store(o.Outage())
	c.m.observeSync(trigger, changed, o)
	return o.Reconcile()
}
