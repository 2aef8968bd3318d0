package leader

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/stratus-ccm/stratus/internal/standby"
)

// Metric names of the leadership tracker.
const (
	MetricLeading             = "stratus_leader_is_leading"
	MetricLeaderSince         = "stratus_leader_since_timestamp_seconds"
	MetricLeaderStart         = "stratus_leader_controllers_started_seconds"
	MetricLeaderFirstCall     = "stratus_leader_first_cloud_call_seconds"
	MetricInformersStarted    = "stratus_cache_informers_started_total"
	MetricCacheSynced         = "stratus_cache_synced"
	phaseStandby, phaseLeader = "standby", "leading"
)

// Tracker follows this replica from standby to leader: which informers
// it started before and after winning the lease, when it won, how long its
// controllers took to start and when the first cloud call went out.
type Tracker struct {
	// election is false without leader election: the replica leads from
	// the start, and no informer start counts as cold.
	election bool
	scheme   *runtime.Scheme
	log      logr.Logger

	leading atomic.Bool
	// types holds the Go types already seen, so that the reads that
	// follow (every Get and List) cost one map lookup and no lock.
	types   sync.Map
	mu      sync.Mutex
	started map[informerKey]bool
	since   time.Time

	m leadershipMetrics
}

type leadershipMetrics struct {
	leading, since, start, firstCall, synced prometheus.Gauge
	informers                                *prometheus.CounterVec
}

// informerKey identifies an informer as controller-runtime's cache does:
// by kind and whether it holds only metadata.
type informerKey struct {
	gvk      schema.GroupVersionKind
	metadata bool
}

// NewTracker returns a tracker whose metrics are registered on reg (none
// when nil); election is whether this replica campaigns at all.
func NewTracker(election bool, scheme *runtime.Scheme, reg prometheus.Registerer, log logr.Logger) (*Tracker, error) {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	l := &Tracker{election: election, scheme: scheme, log: log, started: map[informerKey]bool{}, m: leadershipMetrics{
		leading:   g(MetricLeading, "1 while this replica holds the leader lease and runs the controllers."),
		since:     g(MetricLeaderSince, "Unix time at which this replica last became leader."),
		start:     g(MetricLeaderStart, "Seconds from becoming leader until every controller was started."),
		firstCall: g(MetricLeaderFirstCall, "Seconds from becoming leader until the first cloud provider call."),
		synced:    g(MetricCacheSynced, "1 while the informers of the enabled controllers are synced: on the leader, and on a standby once the holder stopped renewing."),
		informers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricInformersStarted,
			Help: "Informers started, by whether this replica was a standby or leading (a start while leading is a cold list that delays the first action)."},
			[]string{"phase"}),
	}}
	if reg != nil {
		for _, c := range []prometheus.Collector{l.m.leading, l.m.since, l.m.start, l.m.firstCall, l.m.synced, l.m.informers} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("leadership metrics: %w", err)
			}
		}
	}
	l.m.informers.WithLabelValues(phaseStandby)
	l.m.informers.WithLabelValues(phaseLeader)
	return l, nil
}

// Scheme is the scheme the tracker resolves kinds with; the manager uses
// the same.
func (l *Tracker) Scheme() *runtime.Scheme { return l.scheme }

// NewCache wraps the manager's cache so that every informer start is seen.
func (l *Tracker) NewCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &trackedCache{Cache: c, l: l}, nil
}

// saw records that obj's informer is in use. The first use of a kind while
// leading means its informer starts only now: logged and counted.
func (l *Tracker) saw(obj runtime.Object) {
	t := reflect.TypeOf(obj)
	if _, ok := l.types.Load(t); ok {
		return
	}
	k, ok := l.keyOf(obj)
	if !ok {
		return
	}
	if !k.metadata {
		// Metadata-only objects share one Go type across kinds.
		l.types.Store(t, true)
	}
	l.mu.Lock()
	if l.started[k] {
		l.mu.Unlock()
		return
	}
	l.started[k] = true
	l.mu.Unlock()
	phase := phaseStandby
	if l.election && l.leading.Load() {
		phase = phaseLeader
		l.log.Info("Informer started after becoming leader: its initial list delays the controllers; add the kind to the warmed ones",
			"kind", k.gvk.String(), "metadataOnly", k.metadata)
	}
	l.m.informers.WithLabelValues(phase).Inc()
}

// forget undoes saw: a standby that released its caches starts them again
// later, and that start is counted and, while leading, logged.
func (l *Tracker) forget(obj runtime.Object) {
	k, ok := l.keyOf(obj)
	if !ok {
		return
	}
	l.types.Delete(reflect.TypeOf(obj))
	l.mu.Lock()
	delete(l.started, k)
	l.mu.Unlock()
}

func (l *Tracker) keyOf(obj runtime.Object) (informerKey, bool) {
	gvk, err := apiutil.GVKForObject(obj, l.scheme)
	if err != nil {
		return informerKey{}, false
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return informerKey{gvk: gvk, metadata: true}, true
	}
	return informerKey{gvk: gvk}, true
}

// BecameLeader is called the moment the lease is won, before any
// controller starts.
func (l *Tracker) BecameLeader(ctx context.Context, warm bool) time.Time {
	now := time.Now()
	l.mu.Lock()
	l.since = now
	l.mu.Unlock()
	l.leading.Store(true)
	l.m.leading.Set(1)
	l.m.since.Set(float64(now.UnixNano()) / 1e9)
	if l.election {
		klog.FromContext(ctx).Info("Became leader; starting the controllers", "cachesSynced", warm)
	}
	return now
}

// ControllersStarted records how long starting the controllers took.
func (l *Tracker) ControllersStarted(ctx context.Context, since time.Time) {
	d := time.Since(since)
	l.m.start.Set(d.Seconds())
	klog.FromContext(ctx).Info("Controllers started after becoming leader", "elapsed", d)
}

// FirstCloudCall records the first provider call since becoming leader.
func (l *Tracker) FirstCloudCall(ctx context.Context, op string) {
	l.mu.Lock()
	since := l.since
	l.mu.Unlock()
	d := time.Since(since)
	l.m.firstCall.Set(d.Seconds())
	klog.FromContext(ctx).Info("First cloud call after becoming leader", "operation", op, "elapsed", d)
}

// trackedCache is the manager's cache with every informer start reported
// to the leadership tracker. Reads of a kind without an informer start one,
// so they are reported too.
type trackedCache struct {
	cache.Cache
	l *Tracker
}

func (c *trackedCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.l.saw(obj)
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c *trackedCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	obj, err := c.l.scheme.New(gvk)
	if err == nil {
		c.l.saw(obj)
	}
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

// RemoveInformer forgets the kind, so that its next start is seen again.
func (c *trackedCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	c.l.forget(obj)
	return c.Cache.RemoveInformer(ctx, obj)
}

func (c *trackedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.l.saw(obj)
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c *trackedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.l.saw(list)
	return c.Cache.List(ctx, list, opts...)
}

// warmPoll is how often a standby looks at the Lease it watches to decide
// whether to fill its caches; a change of the Lease wakes it sooner.
const warmPoll = 250 * time.Millisecond

// NewWarmer fills the caches of kinds (the enabled controllers' watches)
// when this replica may soon need them, and marks them synced for /readyz
// (synced) and the synced metric. Without leader election (lock nil) that
// is at once. A standby fills them only once the holder has gone a retry
// cycle without renewing (the longest gap between two reads of the
// elector, lock.maxGap), or the Lease is free, which leaves the rest of
// the lease duration for the lists before it can take the Lease; it
// releases them once the holder has renewed again for a lease duration.
func NewWarmer(c cache.Cache, kinds []client.Object, lock *Lock, t *Tracker, synced *atomic.Bool) *standby.Warmer {
	w := &standby.Warmer{Cache: c, Kinds: kinds, Poll: warmPoll, Clock: clock.RealClock{}, Synced: func(ok bool) {
		synced.Store(ok)
		if ok {
			t.m.synced.Set(1)
		} else {
			t.m.synced.Set(0)
		}
	}}
	if lock != nil {
		w.View, w.Changed = lock.view, lock.changes
		w.Suspect, w.Cool = lock.maxGap, lock.leaseDuration
	}
	return w
}
