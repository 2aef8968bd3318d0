package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ControllerName is the controller's name, as upstream spells it; events,
// logs and the --controllers flag carry it.
const ControllerName = "service-lb-controller"

// Defaults of Config.
const (
	// DefaultWorkers: Services are independent, so syncs run in parallel;
	// the cloud's rate limit, not the worker count, should bound a burst.
	DefaultWorkers = 10
	// DefaultNodeSyncDelay is how long the first node change waits for
	// others before the load balancers are updated: nodes tend to join and
	// leave in batches (autoscaler, rolling upgrades), and one update per
	// load balancer per batch is what the cloud's rate limit can afford.
	DefaultNodeSyncDelay = time.Second
	// DefaultMinRetryDelay and DefaultMaxRetryDelay bound the per-Service
	// exponential backoff after errors (upstream's values).
	DefaultMinRetryDelay = 5 * time.Second
	DefaultMaxRetryDelay = 300 * time.Second
	// minRetryAfter keeps a RetryError without a delay from spinning.
	minRetryAfter = 100 * time.Millisecond
)

// Config tunes the controller. Zero values take the defaults above.
type Config struct {
	// ClusterName is passed to every LoadBalancer call.
	ClusterName string
	// LoadBalancerClass: Services whose spec.loadBalancerClass is unset or
	// equal to it are handled; empty handles only Services without a class.
	LoadBalancerClass string
	Workers           int
	NodeSyncDelay     time.Duration
	MinRetryDelay     time.Duration
	MaxRetryDelay     time.Duration

	// DeleteOrphans deletes orphaned load balancers after OrphanGrace;
	// otherwise they are only reported. Orphans are looked for every
	// OrphanInterval when Deps.Lister is set.
	DeleteOrphans  bool
	OrphanGrace    time.Duration
	OrphanInterval time.Duration
}

// ServiceReader reads Services, usually from an informer cache. A missing
// Service is an error for which apierrors.IsNotFound holds.
type ServiceReader interface {
	GetService(ctx context.Context, namespace, name string) (*v1.Service, error)
}

// Deps are the controller's collaborators.
type Deps struct {
	// Client writes finalizers and status, and confirms orphans with a
	// live read before deleting them.
	Client kubernetes.Interface
	// Services reads the Services being synced.
	Services ServiceReader
	// LoadBalancer is the cloud's load balancer API.
	LoadBalancer cloudprovider.LoadBalancer
	// Lister, when set, enables the orphan collector.
	Lister cloud.LoadBalancerLister
	// Recorder receives events about Services.
	Recorder events.EventRecorder
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Controller is the service-lb-controller.
type Controller struct {
	cfg     Config
	client  kubernetes.Interface
	reader  ServiceReader
	lb      cloudprovider.LoadBalancer
	lister  cloud.LoadBalancerLister
	events  events.EventRecorder
	metrics *metrics
	now     func() time.Time

	queue     workqueue.TypedRateLimitingInterface[string]
	nodeQueue workqueue.TypedDelayingInterface[string]
	nodes     *nodeTracker
	state     *stateStore
	synced    []func() bool
	orphans   *orphanTracker
	startOnce sync.Once
}

// New builds a controller. It starts nothing: the manager calls Start.
func New(d Deps, cfg Config) (*Controller, error) {
	switch {
	case d.Client == nil:
		return nil, errors.New("service controller: Client is required")
	case d.Services == nil:
		return nil, errors.New("service controller: Services is required")
	case d.LoadBalancer == nil:
		return nil, errors.New("service controller: LoadBalancer is required")
	case d.Recorder == nil:
		return nil, errors.New("service controller: Recorder is required")
	}
	cfg = withDefaults(cfg)
	if cfg.MinRetryDelay > cfg.MaxRetryDelay {
		return nil, fmt.Errorf("service controller: min retry delay %v exceeds max %v", cfg.MinRetryDelay, cfg.MaxRetryDelay)
	}
	m, err := newMetrics(d.Registerer)
	if err != nil {
		return nil, err
	}
	return &Controller{
		cfg: cfg, client: d.Client, reader: d.Services, lb: d.LoadBalancer, lister: d.Lister,
		events: d.Recorder, metrics: m, now: time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](cfg.MinRetryDelay, cfg.MaxRetryDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "service-lb"}),
		nodeQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: "service-lb-nodes"}),
		nodes:     newNodeTracker(),
		state:     newStateStore(),
		orphans:   newOrphanTracker(),
	}, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.NodeSyncDelay <= 0 {
		cfg.NodeSyncDelay = DefaultNodeSyncDelay
	}
	if cfg.MinRetryDelay <= 0 {
		cfg.MinRetryDelay = DefaultMinRetryDelay
	}
	if cfg.MaxRetryDelay <= 0 {
		cfg.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if cfg.OrphanInterval <= 0 {
		cfg.OrphanInterval = 5 * time.Minute
	}
	if cfg.OrphanGrace < 0 {
		cfg.OrphanGrace = 0
	}
	return cfg
}

// NeedLeaderElection: only the leader touches the cloud.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs the workers until ctx ends. It waits for the informers given
// to Watch, so that the first syncs see every node: a load balancer
// created with half the nodes would need a second call at once.
func (c *Controller) Start(ctx context.Context) error {
	started := false
	c.startOnce.Do(func() { started = true })
	if !started {
		return errors.New("service controller: Start called twice")
	}
	logger := klog.FromContext(ctx).WithName("service-lb")
	ctx = klog.NewContext(ctx, logger)
	defer c.queue.ShutDown()
	defer c.nodeQueue.ShutDown()
	if !c.waitForSync(ctx) {
		return nil
	}
	logger.Info("Starting service controller", "workers", c.cfg.Workers, "loadBalancerClass", c.cfg.LoadBalancerClass,
		"orphanCollector", c.lister != nil, "deleteOrphans", c.cfg.DeleteOrphans)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	wg.Go(func() {
		for c.processNodeSync(ctx) {
		}
	})
	if c.lister != nil {
		wg.Go(func() { c.runOrphanCollector(ctx) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	c.nodeQueue.ShutDown()
	wg.Wait()
	logger.Info("Stopped service controller")
	return nil
}

func (c *Controller) waitForSync(ctx context.Context) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done := true
		for _, s := range c.synced {
			done = done && s()
		}
		if done {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// processNext runs one sync and schedules what follows from its result:
// nothing, a retry after the delay the cloud asked for, or a retry with
// per-Service exponential backoff. The queue never hands the same key to
// two workers, so a Service's syncs never overlap; other Services proceed.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	start := c.now()
	err := c.sync(ctx, key)
	c.metrics.syncDuration.Observe(c.now().Sub(start).Seconds())
	logger := klog.FromContext(ctx).WithValues("service", key)
	if err == nil {
		c.metrics.syncs.WithLabelValues(resultSuccess).Inc()
		c.queue.Forget(key)
		return true
	}
	if d, ok := cloud.RetryAfter(err); ok {
		c.metrics.syncs.WithLabelValues(resultRetry).Inc()
		d = max(d, minRetryAfter)
		logger.V(2).Info("Cloud asked to retry later", "after", d, "reason", err.Error())
		c.queue.AddAfter(key, d)
		return true
	}
	c.metrics.syncs.WithLabelValues(resultError).Inc()
	logger.Error(err, "Sync failed; retrying with backoff", "failures", c.queue.NumRequeues(key)+1)
	c.queue.AddRateLimited(key)
	return true
}

// enqueue adds a Service key.
func (c *Controller) enqueue(svc *v1.Service) {
	c.queue.Add(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}.String())
}
