package nodeipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
)

// ControllerName is the upstream name of this controller.
const ControllerName = "node-ipam-controller"

// Watches returns the kinds the controller reads through the manager's
// shared cache (Nodes). The daemon starts and syncs their informers on
// every replica before the lease is won, so a standby that takes over
// hands this controller complete caches; a test pins it to what
// SetupWithManager really watches.
func Watches() []client.Object { return []client.Object{&corev1.Node{}} }

// Event reasons. CIDRNotAvailable and CIDRAssignmentFailed are upstream's.
const (
	ReasonCIDRNotAvailable      = "CIDRNotAvailable"
	ReasonCIDRAssignmentFailed  = "CIDRAssignmentFailed"
	ReasonPodCIDROutsideCluster = "PodCIDROutsideClusterCIDR"
	ReasonPodCIDRCollision      = "PodCIDRCollision"
	ReasonInvalidPodCIDR        = "InvalidPodCIDR"
	eventAction                 = "AllocatePodCIDR"
)

// Check reports what New would refuse in cfg's ranges (a service range
// that leaves a cluster CIDR no subnet to hand out) without building a
// controller, so that the flags are refused before leader election
// rather than by the leader once it holds the lease.
func (cfg Config) Check() error {
	if len(cfg.MaskSizes) != len(cfg.ClusterCIDRs) {
		return fmt.Errorf("node ipam controller: %d mask sizes for %d cluster CIDRs", len(cfg.MaskSizes), len(cfg.ClusterCIDRs))
	}
	if _, err := newAllocator(cfg.ClusterCIDRs, cfg.MaskSizes, cfg.ServiceCIDRs, nil); err != nil {
		return fmt.Errorf("node ipam controller: %w", err)
	}
	return nil
}

// ErrOverlap is wrapped by New when the service range leaves nothing of a
// cluster CIDR to allocate.
var ErrOverlap = errors.New("no pod CIDR left to allocate")

// Config is the controller's configuration, already parsed from flags.
type Config struct {
	// ClusterCIDRs are one IPv4 and/or one IPv6 prefix; a Node gets one
	// sub-CIDR of each, in this order.
	ClusterCIDRs []netip.Prefix
	// MaskSizes[i] is the prefix length of the sub-CIDRs of ClusterCIDRs[i].
	MaskSizes []int
	// ServiceCIDRs are never handed out.
	ServiceCIDRs []netip.Prefix
	// Workers is the number of concurrent syncs (DefaultWorkers when
	// zero).
	Workers int
	// MinRetry and MaxRetry bound the exponential backoff of a Node whose
	// allocation failed (DefaultMinRetry and DefaultMaxRetry when zero).
	MinRetry, MaxRetry time.Duration
}

// Defaults of Config's fields left zero.
const (
	DefaultWorkers  = 10
	DefaultMinRetry = time.Second
	DefaultMaxRetry = 2 * time.Minute
)

// Deps are the controller's collaborators: the shared ones only
// (kit.Deps; Explain receives each Node's allocation attempts). The
// controller makes no cloud call.
type Deps struct {
	kit.Deps
}

// Controller allocates pod CIDRs to Nodes.
type Controller struct {
	client   client.Client
	recorder events.EventRecorder
	cfg      Config
	alloc    *allocator
	m        *metrics
	// limiter is the queue's per-Node backoff after a failed allocation.
	limiter *kit.Backoff[reconcile.Request]

	learnMu sync.Mutex
	learned bool

	// queue is captured when the controller starts, so that a release can
	// wake Nodes waiting for a free CIDR instead of leaving them to backoff.
	queue   kit.Queue[reconcile.Request]
	waitMu  sync.Mutex
	waiting map[string]struct{}
	explain *explain.Store
}

// New validates cfg and builds the controller. It has no side effects
// beyond registering metrics.
func New(deps Deps, cfg Config) (*Controller, error) {
	shared, err := deps.Resolve(ControllerName)
	if err != nil {
		return nil, err
	}
	if len(cfg.ClusterCIDRs) == 0 || len(cfg.ClusterCIDRs) > 2 {
		return nil, fmt.Errorf("node ipam controller: want one or two cluster CIDRs (one per IP family), got %d", len(cfg.ClusterCIDRs))
	}
	if len(cfg.MaskSizes) != len(cfg.ClusterCIDRs) {
		return nil, fmt.Errorf("node ipam controller: %d mask sizes for %d cluster CIDRs", len(cfg.MaskSizes), len(cfg.ClusterCIDRs))
	}
	if len(cfg.ClusterCIDRs) == 2 && cfg.ClusterCIDRs[0].Addr().Is4() == cfg.ClusterCIDRs[1].Addr().Is4() {
		return nil, fmt.Errorf("node ipam controller: cluster CIDRs %s and %s are of the same IP family; dual-stack needs one of each",
			cfg.ClusterCIDRs[0], cfg.ClusterCIDRs[1])
	}
	cfg.Workers = kit.OrDefault(cfg.Workers, DefaultWorkers)
	cfg.MinRetry = kit.OrDefault(cfg.MinRetry, DefaultMinRetry)
	if cfg.MaxRetry < cfg.MinRetry {
		cfg.MaxRetry = max(DefaultMaxRetry, cfg.MinRetry)
	}
	m, err := newMetrics(shared.Registerer)
	if err != nil {
		return nil, err
	}
	a, err := newAllocator(cfg.ClusterCIDRs, cfg.MaskSizes, cfg.ServiceCIDRs, m)
	if err != nil {
		return nil, fmt.Errorf("node ipam controller: %w", err)
	}
	c := &Controller{client: shared.Client, recorder: shared.Recorder, cfg: cfg, alloc: a, m: m, explain: shared.Explain,
		limiter: kit.NewBackoff[reconcile.Request]("per-Node", cfg.MinRetry, cfg.MaxRetry), waiting: map[string]struct{}{}}
	shared.Explain.Describe(explain.KindNode, ControllerName, c.describe)
	return c, nil
}

// SetupWithManager adds the controller to mgr; it may be called after the
// manager has started.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(kit.Kind(mgr.GetCache(), &corev1.Node{},
			&handler.TypedEnqueueRequestForObject[*corev1.Node]{}, nodePredicate())).
		WatchesRawSource(c.queue.Source()).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: c.cfg.Workers,
			RateLimiter:             c.limiter,
		}).
		Complete(c)
	if err != nil {
		return fmt.Errorf("node ipam controller: set up controller: %w", err)
	}
	return nil
}

// nodePredicate passes the events that can change what a Node needs:
// creation, deletion, and updates that touch the pod CIDRs or leave a Node
// still without them (periodic resyncs retry those).
func nodePredicate() predicate.TypedPredicate[*corev1.Node] {
	return predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			return len(podCIDRs(e.ObjectNew)) == 0 || !slices.Equal(podCIDRs(e.ObjectOld), podCIDRs(e.ObjectNew)) ||
				e.ObjectOld.UID != e.ObjectNew.UID
		},
	}
}

// Reconcile implements reconcile.Reconciler: one Node's sync, whose
// outcome (the kit's) retries a failure with per-Node backoff.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = kit.WithController(ctx, ControllerName)
	ctx = explain.WithObject(ctx, nodeRef(req.Name))
	o := c.limiter.Outcome(ctx, req, c.sync(ctx, req.Name))
	c.recordSync(req.Name, o)
	return o.Reconcile()
}
