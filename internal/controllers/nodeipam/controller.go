package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
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
	// Workers is the number of concurrent syncs (default 10).
	Workers int
	// MinRetry and MaxRetry bound the exponential backoff of a Node whose
	// allocation failed (defaults 1s and 2m).
	MinRetry, MaxRetry time.Duration
}

// Deps are the controller's collaborators.
type Deps struct {
	// Client reads Nodes (from the manager's cache in production) and
	// patches them.
	Client client.Client
	// Recorder emits events on Nodes; nil emits none.
	Recorder events.EventRecorder
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
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
}

// New validates cfg and builds the controller. It has no side effects
// beyond registering metrics.
func New(deps Deps, cfg Config) (*Controller, error) {
	if deps.Client == nil {
		return nil, errors.New("node ipam controller: a client is required")
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
	if cfg.Workers <= 0 {
		cfg.Workers = 10
	}
	if cfg.MinRetry <= 0 {
		cfg.MinRetry = time.Second
	}
	if cfg.MaxRetry < cfg.MinRetry {
		cfg.MaxRetry = max(2*time.Minute, cfg.MinRetry)
	}
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	a, err := newAllocator(cfg.ClusterCIDRs, cfg.MaskSizes, cfg.ServiceCIDRs, m)
	if err != nil {
		return nil, fmt.Errorf("node ipam controller: %w", err)
	}
	return &Controller{client: client.WithFieldOwner(deps.Client, ControllerName), recorder: kit.Recorder(deps.Recorder), cfg: cfg, alloc: a, m: m,
		limiter: kit.NewBackoff[reconcile.Request]("per-Node", cfg.MinRetry, cfg.MaxRetry), waiting: map[string]struct{}{}}, nil
}

// SetupWithManager adds the controller to mgr; it may be called after the
// manager has started.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Node{},
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
	return c.limiter.Outcome(ctx, req, c.sync(ctx, req.Name)).Reconcile()
}

// sync brings one Node's pod CIDRs in line: learn what it carries, give it
// CIDRs when it has none, release them when it is gone.
func (c *Controller) sync(ctx context.Context, name string) error {
	log := klog.FromContext(ctx)
	if err := c.learnExisting(ctx); err != nil {
		return err
	}
	node := &corev1.Node{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			if c.alloc.release(name) {
				log.V(2).Info("Released pod CIDRs of deleted node", "node", klog.KRef("", name))
				c.wakeWaiting()
			}
			return nil
		}
		return fmt.Errorf("node ipam controller: get node %s: %w", name, err)
	}
	if !node.DeletionTimestamp.IsZero() {
		return nil // released once the Node is gone
	}
	if len(podCIDRs(node)) > 0 {
		c.report(ctx, node, c.alloc.observe(node))
		c.notWaiting(name)
		return nil
	}
	return c.allocate(ctx, node)
}

// learnExisting occupies the pod CIDRs of every Node in the cache, once,
// before any allocation: workers start only after the cache has synced, and
// every worker passes through here under learnMu.
func (c *Controller) learnExisting(ctx context.Context) error {
	c.learnMu.Lock()
	defer c.learnMu.Unlock()
	if c.learned {
		return nil
	}
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes); err != nil {
		return fmt.Errorf("node ipam controller: list nodes to learn existing pod CIDRs: %w", err)
	}
	n := 0
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if len(podCIDRs(node)) == 0 {
			continue
		}
		c.report(ctx, node, c.alloc.observe(node))
		n++
	}
	c.learned = true
	klog.FromContext(ctx).Info("Learned existing pod CIDRs", "nodes", len(nodes.Items), "withCIDRs", n)
	return nil
}

func (c *Controller) allocate(ctx context.Context, node *corev1.Node) error {
	log := klog.FromContext(ctx)
	cidrs, err := c.alloc.allocate(node)
	if err != nil {
		c.m.failures.WithLabelValues(failureExhausted).Inc()
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonCIDRNotAvailable, eventAction,
			"Node %s: no pod CIDR available: %v", node.Name, err)
		c.markWaiting(node.Name)
		return fmt.Errorf("node ipam controller: node %s: %w", node.Name, err)
	}
	strs := make([]string, len(cidrs))
	for i, p := range cidrs {
		strs[i] = p.String()
	}
	if err := c.patchPodCIDRs(ctx, node.Name, strs); err != nil {
		c.m.failures.WithLabelValues(failurePatch).Inc()
		if notApplied(err) {
			// The API server refused the change (for example the cache was
			// stale and the Node already has CIDRs): give them back; the
			// next sync reads the Node again.
			c.alloc.abandon(node.Name, node.UID)
		}
		// Otherwise the outcome is unknown: keep the CIDRs pending, so the
		// retry patches the same values instead of taking new ones.
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonCIDRAssignmentFailed, eventAction,
			"Node %s: setting pod CIDRs %s failed: %v", node.Name, strings.Join(strs, ","), err)
		return fmt.Errorf("node ipam controller: set pod CIDRs %v on node %s: %w", strs, node.Name, err)
	}
	c.notWaiting(node.Name)
	log.Info("Allocated pod CIDRs", "node", klog.KObj(node), "podCIDRs", strs)
	return nil
}

// patchPodCIDRs sets spec.podCIDR and spec.podCIDRs in one request. A JSON
// merge patch replaces the list as a whole (a strategic merge patch would
// merge it with whatever the server has).
func (c *Controller) patchPodCIDRs(ctx context.Context, name string, cidrs []string) error {
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidrs[0], "podCIDRs": cidrs}})
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	node := &corev1.Node{}
	node.Name = name
	return c.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, body))
}

// notApplied reports errors after which the patch certainly did not change
// the Node.
func notApplied(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsNotFound(err) || apierrors.IsConflict(err) ||
		apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
}

// report turns problems with a Node's existing CIDRs into Warning events and
// metrics; the controller keeps running.
func (c *Controller) report(ctx context.Context, node *corev1.Node, problems []problem) {
	for _, p := range problems {
		switch p.reason {
		case ReasonPodCIDRCollision:
			c.m.collision.Inc()
		default:
			c.m.outside.Inc()
		}
		klog.FromContext(ctx).Info("Node carries a pod CIDR that cannot be tracked", "node", klog.KObj(node),
			"podCIDR", p.cidr, "reason", p.reason, "detail", p.detail)
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, p.reason, eventAction,
			"Pod CIDR %s of node %s: %s", p.cidr, node.Name, p.detail)
	}
}

func (c *Controller) markWaiting(name string) {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	c.waiting[name] = struct{}{}
}

func (c *Controller) notWaiting(name string) {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	delete(c.waiting, name)
}

// wakeWaiting requeues Nodes that found the pool empty, now that a CIDR was
// released, so they do not sit out the rest of their backoff.
func (c *Controller) wakeWaiting() {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	for name := range c.waiting {
		c.queue.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
}
