package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/ownership"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ControllerName is the controller's name, as upstream spells it; events,
// logs and the --controllers flag carry it.
const ControllerName = "cloud-node-lifecycle-controller"

// Watches returns the kinds the controller reads through the manager's
// shared cache (Nodes). The daemon starts and syncs their informers on
// every replica before the lease is won, so a standby that takes over
// hands this controller complete caches; a test pins it to what
// SetupWithManager really watches.
func Watches() []client.Object { return []client.Object{&corev1.Node{}} }

// Event reasons: DeletingNode and DeletingNodeFailed are upstream's.
const (
	ReasonDeletingNode       = "DeletingNode"
	ReasonDeletingNodeFailed = "DeletingNodeFailed"
	ReasonCloudCheckFailed   = "CloudInstanceCheckFailed"
	// ReasonDeletionUnconfirmed: the cloud's list lacks the Node's
	// instance, but the per-node check did not confirm it is gone.
	ReasonDeletionUnconfirmed = "NodeDeletionUnconfirmed"
	// ReasonDeletionCapped: the Node's instance is gone, but the deletion
	// cap holds its deletion back for now.
	ReasonDeletionCapped = "NodeDeletionCapped"
)

const (
	actionDelete = "Delete"
	actionCheck  = "CheckInstance"
)

// DefaultCloudTimeout bounds one cloud call when Config leaves it zero.
const DefaultCloudTimeout = 30 * time.Second

// ShutdownTaint is the taint that marks a Node whose machine is stopped,
// upstream's key and effect. A function, not a variable: a caller that
// changed a shared value would change what every controller writes.
func ShutdownTaint() corev1.Taint {
	return corev1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: corev1.TaintEffectNoSchedule}
}

// Deps are the controller's collaborators.
type Deps struct {
	// Client reads Nodes (from the manager's cache in production), patches
	// and deletes them.
	Client client.Client
	// Instances is the standard per-node cloud interface; required.
	Instances cloudprovider.InstancesV2
	// Lister, when set, answers for every NotReady Node in one call.
	Lister cloud.InstanceLister
	// Recorder emits events on Nodes; nil emits none.
	Recorder events.EventRecorder
	// Recovery, when set, tells the controller that the cloud answers again
	// after an outage: a monitor period runs at once.
	Recovery cloud.RecoveryNotifier
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Clock times monitor periods and dates deletions for the cap's
	// window; nil is the real clock.
	Clock clock.Clock
	// Ownership says which Nodes are the provider's in a hybrid cluster:
	// a foreign Node is never checked, tainted or deleted, and one that
	// names no platform is never deleted. The zero value owns every Node,
	// as upstream's controller assumes.
	Ownership ownership.Policy
	// Explain receives each period's verdict on every Node it looks at
	// (explain.go); nil records nothing.
	Explain *explain.Store
}

// Config tunes the controller.
type Config struct {
	// Period is --node-monitor-period.
	Period time.Duration
	// Workers is --concurrent-node-lifecycle-syncs: NotReady Nodes checked
	// at once within a period; zero means 1, upstream's default.
	Workers int
	// CloudTimeout bounds one cloud call.
	CloudTimeout time.Duration
	// Cap bounds the deletions per window; zero values take its defaults.
	Cap DeletionCap
}

// Controller is the cloud-node-lifecycle-controller.
type Controller struct {
	client    client.Client
	instances cloudprovider.InstancesV2
	lister    cloud.InstanceLister
	recorder  events.EventRecorder
	metrics   *metrics
	cfg       Config
	clock     clock.Clock
	ledger    *ledger
	ownership ownership.Policy
	// queue is captured when the controller starts, for recovery.
	queue    kit.Queue[pass]
	explain  *explain.Store
	verdicts verdicts
	// deleting serializes the workers' deletions (gone).
	deleting sync.Mutex
}

// New builds the controller; it starts nothing.
func New(deps Deps, cfg Config) (*Controller, error) {
	if deps.Client == nil {
		return nil, errors.New("node lifecycle controller: a client is required")
	}
	if deps.Instances == nil {
		return nil, errors.New("node lifecycle controller: the cloud provider's InstancesV2 is required")
	}
	if cfg.Period <= 0 {
		return nil, fmt.Errorf("node lifecycle controller: period %s must be positive", cfg.Period)
	}
	if cfg.CloudTimeout <= 0 {
		cfg.CloudTimeout = DefaultCloudTimeout
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("node lifecycle controller: workers %d must not be negative", cfg.Workers)
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	capc, err := cfg.Cap.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Cap = capc
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{client: client.WithFieldOwner(deps.Client, ControllerName), instances: deps.Instances, lister: deps.Lister,
		recorder: kit.Recorder(deps.Recorder), metrics: m, cfg: cfg, clock: kit.Clock(deps.Clock), ownership: deps.Ownership,
		explain: deps.Explain, verdicts: verdicts{lines: map[string]string{}}}
	c.ledger = &ledger{cap: capc, clock: c.clock}
	deps.Explain.Describe(explain.KindNode, ControllerName, c.describe)
	kit.OnRecovered(deps.Recovery, c.recovered)
	return c, nil
}

// recovered runs a monitor period now that the cloud answers again: the
// one that failed during the outage would otherwise wait for the next.
func (c *Controller) recovered() { c.queue.Add(pass{}) }

// pass is the controller's one work item: every period covers every Node,
// so the queue never holds more than one.
type pass struct{}

// SetupWithManager adds the controller to mgr (which may be running): a
// source queues the first period at start, and each period schedules the
// next with RequeueAfter. Like every controller, it runs on the leader only.
func (c *Controller) SetupWithManager(ctx context.Context, mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Node{}, attentionField, needsAttention); err != nil {
		return fmt.Errorf("node lifecycle controller: index nodes: %w", err)
	}
	err := builder.TypedControllerManagedBy[pass](mgr).
		Named(ControllerName).
		WatchesRawSource(c.queue.Source(pass{})).
		WithOptions(controller.TypedOptions[pass]{MaxConcurrentReconciles: 1}).
		Complete(c)
	if err != nil {
		return fmt.Errorf("node lifecycle controller: set up: %w", err)
	}
	return nil
}

// Reconcile implements reconcile.TypedReconciler: one monitor period, then
// the next one a period later. A failed period is retried by the next one,
// not sooner, as upstream's monitor does: a cloud that failed to answer is
// not asked again at once.
func (c *Controller) Reconcile(ctx context.Context, p pass) (reconcile.Result, error) {
	ctx = kit.WithController(ctx, ControllerName)
	_, err := c.sync(ctx, p)
	o := c.period().Outcome(err)
	if o.Err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(o.Err, "Monitoring nodes failed; next period retries", "result", o.Result)
	}
	return o.Reconcile()
}

// period is the retry policy: every outcome, a period's or a Node's, is
// looked at again at the next period.
func (c *Controller) period() kit.Periodic {
	return kit.Periodic{Period: c.cfg.Period, Why: fmt.Sprintf("the next monitor period (--node-monitor-period %s)", c.cfg.Period)}
}

// Summary is what one period did.
type Summary struct {
	NotReady  int
	Deleted   int
	Tainted   int
	Untainted int
	Undecided int
	// Unknowable counts NotReady Nodes the provider can never tell about
	// (it answers NotImplemented, as a legacy provider without instance
	// IDs does for a Node without providerID): left alone, quietly.
	Unknowable     int
	CloudListCalls int
	// Confirmations counts the per-node checks of Nodes the list lacked;
	// Disagreements, those that did not confirm the list (kept).
	Confirmations int
	Disagreements int
	// Held counts the Nodes whose instance is gone that the deletion cap
	// kept this period.
	Held int
	// Foreign counts the Nodes of another platform left alone; NoPlatform,
	// the Nodes naming no platform kept although the cloud lacks them.
	Foreign    int
	NoPlatform int
}

// sync runs one monitor period over every Node.
func (c *Controller) sync(ctx context.Context, _ pass) (Summary, error) {
	start := c.clock.Now()
	defer func() {
		d := c.clock.Since(start).Seconds()
		c.metrics.duration.Observe(d)
		c.metrics.upstreamDuration.Observe(d)
	}()
	// Only the Nodes that need attention, from the index; uncopied, since
	// they are only read (a patch works on its own copy).
	var list corev1.NodeList
	if err := c.client.List(ctx, &list, client.MatchingFields{attentionField: attentionValue}, client.UnsafeDisableDeepCopy); err != nil {
		return Summary{}, fmt.Errorf("list nodes from cache: %w", err)
	}
	var sum Summary
	var errs []error
	var notReady []*corev1.Node
	judged := map[string]bool{}
	defer func() { c.forgetUnjudged(ctx, judged) }()
	for i := range list.Items {
		n := &list.Items[i]
		if c.ownership.Of(n) == ownership.Foreign {
			sum.Foreign++
			continue
		}
		if !isReady(n) {
			notReady = append(notReady, n)
			continue
		}
		if HasShutdownTaint(n) {
			judged[n.Name] = true
			if err := c.removeShutdownTaint(ctx, n); err != nil {
				errs = append(errs, err)
				c.judged(n.Name, verdict{line: "Ready, but removing the shutdown taint failed", err: err})
			} else {
				sum.Untainted++
				c.judged(n.Name, verdict{line: "Ready again: removed the shutdown taint " + shutdownTaintText()})
			}
		}
	}
	sum.NotReady = len(notReady)
	if len(notReady) == 0 {
		return sum, errors.Join(errs...)
	}
	check, err := c.checker(ctx, &sum)
	if err != nil {
		c.undecided(ctx, notReady, err)
		for _, n := range notReady {
			judged[n.Name] = true
			c.judged(n.Name, verdict{line: "NotReady; the cloud's instance list failed, so nothing was decided this period", err: err})
		}
		sum.Undecided = len(notReady)
		return sum, errors.Join(append(errs, err)...)
	}
	for _, n := range notReady {
		judged[n.Name] = true
	}
	// NotReady Nodes are checked in parallel (--concurrent-node-lifecycle-syncs,
	// as upstream's monitor does since v1.37); each worker counts into its
	// own Summary, and deletions take turns (gone), so the cap holds
	// exactly whatever the worker count.
	var ps periodState
	sums := make([]Summary, len(notReady))
	nodeErrs := make([]error, len(notReady))
	workqueue.ParallelizeUntil(ctx, c.cfg.Workers, len(notReady), func(i int) {
		n := notReady[i]
		v, err := c.monitor(explain.WithObject(ctx, nodeRef(n.Name)), n, check, &ps, &sums[i])
		nodeErrs[i] = err
		c.judged(n.Name, v)
	})
	for i := range sums {
		sum.add(&sums[i])
	}
	c.metrics.heldNow.Set(float64(sum.Held))
	return sum, errors.Join(append(errs, nodeErrs...)...)
}

// add counts o's per-Node figures into s (not NotReady, counted once by
// the period).
func (s *Summary) add(o *Summary) {
	s.Deleted += o.Deleted
	s.Tainted += o.Tainted
	s.Untainted += o.Untainted
	s.Undecided += o.Undecided
	s.Unknowable += o.Unknowable
	s.CloudListCalls += o.CloudListCalls
	s.Confirmations += o.Confirmations
	s.Disagreements += o.Disagreements
	s.Held += o.Held
	s.Foreign += o.Foreign
	s.NoPlatform += o.NoPlatform
}

// monitor decides one NotReady Node, and says what it decided.
func (c *Controller) monitor(ctx context.Context, n *corev1.Node, check checkFunc, ps *periodState, sum *Summary) (verdict, error) {
	exists, shutdown, err := check(ctx, n, sum)
	if errors.Is(err, errCannotTell) {
		// Upstream logs an error for such a Node every period and leaves
		// it; Stratus leaves it too, without the noise: nothing will
		// change until the Node gets a providerID.
		klog.FromContext(ctx).V(4).Info("Provider cannot tell whether the node's instance exists; leaving it", "node", klog.KObj(n), "err", err)
		sum.Unknowable++
		return verdict{line: fmt.Sprintf("NotReady; left alone: the cloud provider cannot tell whether its instance exists (spec.providerID %q): %v", n.Spec.ProviderID, err)}, nil
	}
	if errors.Is(err, errKept) {
		return verdict{line: "NotReady; kept: " + err.Error(), deferred: true}, nil
	}
	if err != nil {
		c.undecided(ctx, []*corev1.Node{n}, err)
		sum.Undecided++
		return verdict{line: "NotReady; the cloud did not answer whether its instance exists, so nothing was decided this period", err: err}, nil
	}
	switch {
	case !exists && c.ownership.Of(n) == ownership.Unknown:
		// In a hybrid cluster a Node without providerID or platform
		// annotation may be another platform's, registered before its
		// controller set the providerID: the cloud's not-found alone
		// does not prove it was ever ours.
		klog.FromContext(ctx).V(2).Info("Not deleting node: it names no platform, and the cloud does not know it", "node", klog.KObj(n))
		sum.NoPlatform++
		return verdict{line: "NotReady; kept although the cloud does not know its instance: it names no platform (no spec.providerID, no platform annotation), so it may be another platform's"}, nil
	case !exists:
		return c.gone(ctx, n, ps, sum)
	case shutdown && !HasShutdownTaint(n):
		if err := c.addShutdownTaint(ctx, n); err != nil {
			return verdict{line: "NotReady; its instance is shut down, but adding the shutdown taint failed", err: err}, err
		}
		sum.Tainted++
		return verdict{line: "NotReady; its instance is shut down: tainted " + shutdownTaintText()}, nil
	case shutdown:
		return verdict{line: "NotReady; its instance is shut down: it carries " + shutdownTaintText()}, nil
	}
	return verdict{line: "NotReady, but its instance exists and runs: nothing for this controller to do (the kubelet does not report Ready)"}, nil
}

// gone deletes a Node whose instance the cloud confirmed gone, unless the
// deletion cap holds it back.
func (c *Controller) gone(ctx context.Context, n *corev1.Node, ps *periodState, sum *Summary) (verdict, error) {
	// One deletion at a time: the cap's count, the delete and the ledger
	// entry must not interleave with another worker's.
	c.deleting.Lock()
	defer c.deleting.Unlock()
	held, why, err := c.capHolds(ctx, n, ps, sum)
	if err != nil {
		return verdict{line: "NotReady, its instance gone; the deletion cap could not be checked", err: err}, err
	}
	if held {
		return verdict{line: "NotReady, its instance gone; deletion held by the deletion cap: " + why, deferred: true}, nil
	}
	deleted, err := c.deleteNode(ctx, n)
	if err != nil {
		return verdict{line: "NotReady, its instance gone; deleting the Node failed", err: err}, err
	}
	if !deleted {
		return verdict{line: "NotReady, its instance gone; the Node changed since it was judged, so the next period decides again", deferred: true}, nil
	}
	c.ledger.record(zoneOf(n))
	sum.Deleted++
	return verdict{deleted: true}, nil
}

// checkFunc answers whether a Node's machine exists and is shut down.
type checkFunc func(ctx context.Context, n *corev1.Node, sum *Summary) (exists, shutdown bool, err error)

// checker returns how this period asks the cloud: one list for all Nodes
// when the provider can list (a failed list decides nothing), with a
// per-node second opinion before a Node the list lacks is judged gone;
// else per Node.
func (c *Controller) checker(ctx context.Context, sum *Summary) (checkFunc, error) {
	if c.lister == nil {
		return c.checkOne, nil
	}
	lctx, cancel := context.WithTimeout(ctx, c.cfg.CloudTimeout)
	defer cancel()
	sum.CloudListCalls++
	insts, err := c.lister.ListInstances(lctx)
	c.metrics.observeCall(opListInstances, err)
	if err != nil {
		return nil, err // the cloud wrapper names the operation
	}
	idx := newIndex(insts)
	return func(ctx context.Context, n *corev1.Node, sum *Summary) (bool, bool, error) {
		exists, shutdown, err := idx.lookup(n)
		if err != nil || exists {
			return exists, shutdown, err
		}
		return c.secondOpinion(ctx, n, sum)
	}, nil
}

// errCannotTell marks a Node the provider can never answer for.
var errCannotTell = errors.New("the cloud provider cannot tell (NotImplemented)")

// checkOne asks the cloud about one Node with the standard calls.
func (c *Controller) checkOne(ctx context.Context, n *corev1.Node, _ *Summary) (exists, shutdown bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CloudTimeout)
	defer cancel()
	exists, err = c.instances.InstanceExists(ctx, n)
	c.metrics.observeExists(exists, err)
	if errors.Is(err, cloudprovider.NotImplemented) {
		return false, false, fmt.Errorf("%w: %w", errCannotTell, err)
	}
	if err != nil {
		return false, false, err // the cloud wrapper names the operation
	}
	if !exists {
		return false, false, nil
	}
	shutdown, err = c.instances.InstanceShutdown(ctx, n)
	c.metrics.observeCall(opInstanceShutdown, err)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		// Gone between the two calls: the next period sees it gone.
		return true, false, nil
	}
	if err != nil {
		return true, false, err // the cloud wrapper names the operation
	}
	return true, shutdown, nil
}

// undecided records that the cloud could not answer for these Nodes.
func (c *Controller) undecided(ctx context.Context, nodes []*corev1.Node, err error) {
	if ctx.Err() != nil {
		return
	}
	c.metrics.cloudErrors.Inc()
	klog.FromContext(ctx).Info("Cloud did not answer; not deleting or tainting NotReady nodes this period", "nodes", len(nodes), "err", err)
	for _, n := range nodes {
		c.event(n, corev1.EventTypeWarning, ReasonCloudCheckFailed, actionCheck, "Could not check the node's instance, will retry: %v", err)
	}
}

// deleteNode deletes a Node whose machine is gone. The preconditions make
// the delete apply only to the Node as judged: a Node re-registered under
// the same name, or one that changed since the cache showed it (became
// Ready, say), is left for the next period. It reports whether this call
// deleted the Node.
func (c *Controller) deleteNode(ctx context.Context, n *corev1.Node) (bool, error) {
	log := klog.FromContext(ctx).WithValues("node", klog.KObj(n))
	log.Info("Deleting node: its instance no longer exists in the cloud")
	c.event(n, corev1.EventTypeNormal, ReasonDeletingNode, actionDelete, "Deleting node %s because it does not exist in the cloud provider", n.Name)
	uid, rv := n.UID, n.ResourceVersion
	err := c.client.Delete(ctx, n, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err == nil || apierrors.IsNotFound(err) {
		c.metrics.deletions.WithLabelValues("success").Inc()
		return err == nil, nil
	}
	c.metrics.deletions.WithLabelValues("error").Inc()
	if apierrors.IsConflict(err) {
		log.V(2).Info("Node changed since it was judged; deciding again next period")
		return false, nil
	}
	c.event(n, corev1.EventTypeWarning, ReasonDeletingNodeFailed, actionDelete, "Failed deleting node %s: %v", n.Name, err)
	return false, fmt.Errorf("delete node %s: %w", n.Name, err)
}

func (c *Controller) addShutdownTaint(ctx context.Context, n *corev1.Node) error {
	want := n.DeepCopy()
	want.Spec.Taints = append(want.Spec.Taints, ShutdownTaint())
	if err := c.client.Patch(ctx, want, client.StrategicMergeFrom(n)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("add shutdown taint to node %s: %w", n.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Tainted node: its instance is shut down", "node", klog.KObj(n))
	c.metrics.taints.WithLabelValues("add").Inc()
	return nil
}

func (c *Controller) removeShutdownTaint(ctx context.Context, n *corev1.Node) error {
	want := n.DeepCopy()
	taint := ShutdownTaint()
	want.Spec.Taints = slices.DeleteFunc(want.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) })
	if err := c.client.Patch(ctx, want, client.StrategicMergeFrom(n)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("remove shutdown taint from node %s: %w", n.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Removed shutdown taint from Ready node", "node", klog.KObj(n))
	c.metrics.taints.WithLabelValues("remove").Inc()
	return nil
}

func (c *Controller) event(n *corev1.Node, typ, reason, action, note string, args ...any) {
	c.recorder.Eventf(n, nil, typ, reason, action, note, args...)
}

// isReady reports whether the Node's Ready condition is True; a missing
// condition counts as Unknown, as upstream's controller treats it.
func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// shutdownTaintText is the taint as explain and events show it.
func shutdownTaintText() string {
	t := ShutdownTaint()
	return t.ToString()
}

// HasShutdownTaint tells whether n carries the shutdown taint.
func HasShutdownTaint(n *corev1.Node) bool {
	taint := ShutdownTaint()
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) })
}
