package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
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

// Defaults of Config's fields left zero.
const (
	// DefaultCloudTimeout bounds one cloud call.
	DefaultCloudTimeout = 30 * time.Second
	// DefaultWorkers is upstream's --concurrent-node-lifecycle-syncs.
	DefaultWorkers = 1
)

// ShutdownTaint is the taint that marks a Node whose machine is stopped,
// upstream's key and effect. A function, not a variable: a caller that
// changed a shared value would change what every controller writes.
func ShutdownTaint() corev1.Taint {
	return corev1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: corev1.TaintEffectNoSchedule}
}

// Deps are the controller's collaborators: the shared ones (kit.Deps:
// Recovery runs a monitor period at once when the cloud answers again;
// Clock times the periods and dates deletions for the cap's window;
// Ownership keeps a foreign Node from being checked, tainted or deleted,
// and one that names no platform from being deleted; Explain receives
// each period's verdict on every Node it looks at) and the provider's
// instance interfaces.
type Deps struct {
	kit.Deps
	// Instances is the standard per-node cloud interface; required.
	Instances cloudprovider.InstancesV2
	// Lister, when set, answers for every NotReady Node in one call.
	Lister cloud.InstanceLister
	// APIReader reads past the shared cache; required with Config.Record,
	// whose ConfigMap it reads (see caprecord.go).
	APIReader client.Reader
}

// Config tunes the controller.
type Config struct {
	// Period is --node-monitor-period.
	Period time.Duration
	// Workers is --concurrent-node-lifecycle-syncs: NotReady Nodes checked
	// at once within a period (DefaultWorkers when zero).
	Workers int
	// CloudTimeout bounds one cloud call.
	CloudTimeout time.Duration
	// Cap bounds the deletions per window; zero values take its defaults.
	Cap DeletionCap
	// Record names the ConfigMap that keeps the cap's window across
	// leader changes and restarts (RecordName, in the leader-election
	// namespace). Empty keeps it in memory only: each new process then
	// starts with an empty window.
	Record types.NamespacedName
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
	// record, when set, is where the ledger is kept (caprecord.go).
	record    *recordStore
	ownership ownership.Policy
	// queue is captured when the controller starts, for recovery.
	queue kit.Queue[pass]
	// lastOutage: the last period failed, or left Nodes undecided,
	// because the cloud did; periodOutage collects that during a period.
	lastOutage, periodOutage atomic.Bool
	explain                  *explain.Store
	verdicts                 verdicts
	// deleting serializes the workers' deletions (gone).
	deleting sync.Mutex
}

// New builds the controller; it starts nothing.
func New(deps Deps, cfg Config) (*Controller, error) {
	shared, err := deps.Resolve(ControllerName)
	if err != nil {
		return nil, err
	}
	if deps.Instances == nil {
		return nil, errors.New("node lifecycle controller: the cloud provider's InstancesV2 is required")
	}
	if cfg.Period <= 0 {
		return nil, fmt.Errorf("node lifecycle controller: period %s must be positive", cfg.Period)
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("node lifecycle controller: workers %d must not be negative", cfg.Workers)
	}
	cfg.CloudTimeout = kit.OrDefault(cfg.CloudTimeout, DefaultCloudTimeout)
	cfg.Workers = kit.OrDefault(cfg.Workers, DefaultWorkers)
	capc, err := cfg.Cap.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Cap = capc
	m, err := newMetrics(shared.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{client: shared.Client, instances: deps.Instances, lister: deps.Lister,
		recorder: shared.Recorder, metrics: m, cfg: cfg, clock: shared.Clock, ownership: shared.Ownership,
		explain: shared.Explain, verdicts: verdicts{lines: map[string]string{}}}
	c.ledger = &ledger{cap: capc, clock: c.clock}
	if cfg.Record.Name != "" {
		if deps.APIReader == nil {
			return nil, fmt.Errorf("node lifecycle controller: the deletion record %s needs a reader past the cache (APIReader)", cfg.Record)
		}
		c.record = &recordStore{key: cfg.Record, reader: deps.APIReader, writer: shared.Client}
	}
	shared.Explain.Describe(explain.KindNode, ControllerName, c.describe)
	kit.OnRecovered(shared.Recovery, c.recovered)
	return c, nil
}

// recovered runs a monitor period now that the cloud answers again, when
// the last one failed because the cloud did: it would otherwise wait for
// the next. A period that failed on Nodes' own errors (a providerID the
// provider cannot parse) is not run again early: every early run would ask
// the cloud about every such Node once more.
func (c *Controller) recovered() {
	if c.lastOutage.Load() {
		c.queue.Add(pass{})
	}
}

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
	c.periodOutage.Store(false)
	_, err := c.sync(ctx, p)
	o := c.period().Outcome(err)
	c.lastOutage.Store(o.Outage() || c.periodOutage.Load())
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
