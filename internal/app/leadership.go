package app

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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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

// kindsFor returns the kinds the enabled controllers of table watch, each
// once. Every replica starts and syncs these informers at once, leader or
// not, so that a standby that wins the lease hands its controllers caches
// that are already complete: their first reconcile acts without waiting
// for a list of every Node and Service. A kind missing from a controller's
// watches still works; its informer is then started after the lease is
// won, which the leadership tracker counts and logs as a cold start.
func kindsFor(enabled []string, table []controllerEntry) []client.Object {
	on := map[string]bool{}
	for _, name := range enabled {
		on[name] = true
	}
	seen := map[string]bool{}
	var out []client.Object
	for _, e := range table {
		if !on[e.Name] || e.watches == nil {
			continue
		}
		for _, obj := range e.watches() {
			k := fmt.Sprintf("%T", obj)
			if !seen[k] {
				seen[k] = true
				out = append(out, obj)
			}
		}
	}
	return out
}

// leadership follows this replica from standby to leader: which informers
// it started before and after winning the lease, when it won, how long its
// controllers took to start and when the first cloud call went out.
type leadership struct {
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

func newLeadership(election bool, scheme *runtime.Scheme, reg prometheus.Registerer, log logr.Logger) (*leadership, error) {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	l := &leadership{election: election, scheme: scheme, log: log, started: map[informerKey]bool{}, m: leadershipMetrics{
		leading:   g(MetricLeading, "1 while this replica holds the leader lease and runs the controllers."),
		since:     g(MetricLeaderSince, "Unix time at which this replica last became leader."),
		start:     g(MetricLeaderStart, "Seconds from becoming leader until every controller was started."),
		firstCall: g(MetricLeaderFirstCall, "Seconds from becoming leader until the first cloud provider call."),
		synced:    g(MetricCacheSynced, "1 once the informers of the enabled controllers have synced, on every replica."),
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

// newCache wraps the manager's cache so that every informer start is seen.
func (l *leadership) newCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &trackedCache{Cache: c, l: l}, nil
}

// saw records that obj's informer is in use. The first use of a kind while
// leading means its informer starts only now: logged and counted.
func (l *leadership) saw(obj runtime.Object) {
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

func (l *leadership) keyOf(obj runtime.Object) (informerKey, bool) {
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

// becameLeader is called the moment the lease is won, before any
// controller starts.
func (l *leadership) becameLeader(ctx context.Context, warm bool) time.Time {
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

// controllersStarted records how long starting the controllers took.
func (l *leadership) controllersStarted(ctx context.Context, since time.Time) {
	d := time.Since(since)
	l.m.start.Set(d.Seconds())
	klog.FromContext(ctx).Info("Controllers started after becoming leader", "elapsed", d)
}

// firstCloudCall records the first provider call since becoming leader.
func (l *leadership) firstCloudCall(ctx context.Context, op string) {
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
	l *leadership
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

func (c *trackedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.l.saw(obj)
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c *trackedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.l.saw(list)
	return c.Cache.List(ctx, list, opts...)
}

// cacheWarmer starts the informers of the enabled controllers on every
// replica and marks the caches synced for /readyz once they are: a standby
// is ready when it could take over at once.
type cacheWarmer struct {
	cache  cache.Cache
	kinds  []client.Object
	synced *atomic.Bool
	l      *leadership
}

func (w *cacheWarmer) Start(ctx context.Context) error {
	log := klog.FromContext(ctx)
	start := time.Now()
	for _, obj := range w.kinds {
		// Not blocking: the informers list in parallel, and
		// WaitForCacheSync below waits for all of them.
		if _, err := w.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("start the %T informer: %w", obj, err)
		}
	}
	if !w.cache.WaitForCacheSync(ctx) {
		return nil
	}
	w.synced.Store(true)
	w.l.m.synced.Set(1)
	names := make([]string, 0, len(w.kinds))
	for _, obj := range w.kinds {
		names = append(names, strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1."))
	}
	log.Info("Informer caches synced", "kinds", names, "elapsed", time.Since(start))
	return nil
}

func (w *cacheWarmer) NeedLeaderElection() bool { return false }
