package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// snapshot is one successful ListInstances answer, indexed for lookups.
type snapshot struct {
	// started is when the list call was sent: the answer reflects the cloud
	// no earlier than this.
	started time.Time
	*cloud.InstanceIndex
}

func newSnapshot(started time.Time, list []cloud.Instance) *snapshot {
	return &snapshot{started: started, InstanceIndex: cloud.NewInstanceIndex(list)}
}

// listCall is one ListInstances call, pending or running, that any number
// of syncs wait for.
type listCall struct {
	// started is zero while the call waits for the interval to pass; a
	// pending call serves anyone, since it will start after they arrived.
	started time.Time
	done    chan struct{}
	snap    *snapshot
	err     error
	waiters int
}

// batcher coalesces the metadata needs of concurrent syncs into shared
// ListInstances calls: a sync needs an answer from a list that started no
// earlier than a given time (when its Node was first seen, so that the
// instance had a chance to be in it); the last answer serves it if recent
// enough, else it joins the call in flight or a new one. Calls start at
// most once per interval, so a flood of new Nodes costs one call per
// interval, not one per Node, while the cloud pushes back (batching);
// while it does not, a call starts as soon as the one before has answered,
// so a Node waits for no interval on a cloud with calls to spare.
type batcher struct {
	lister   cloud.InstanceLister
	interval time.Duration
	batching func() bool
	timeout  time.Duration
	metrics  *metrics
	clock    clock.Clock

	mu        sync.Mutex
	last      *snapshot
	inflight  *listCall
	lastStart time.Time
}

func newBatcher(l cloud.InstanceLister, interval, timeout time.Duration, batching func() bool, m *metrics, clk clock.Clock) *batcher {
	return &batcher{lister: l, interval: interval, batching: batching, timeout: timeout, metrics: m, clock: clk}
}

// Get returns an answer from a list call that started at or after notBefore.
func (b *batcher) Get(ctx context.Context, notBefore time.Time) (*snapshot, error) {
	for {
		b.mu.Lock()
		if b.last != nil && !b.last.started.Before(notBefore) {
			s := b.last
			b.mu.Unlock()
			b.metrics.listServed.WithLabelValues(servedCached).Inc()
			return s, nil
		}
		call := b.inflight
		if call == nil {
			call = b.scheduleLocked(ctx)
		}
		joined := call.started.IsZero() || !call.started.Before(notBefore)
		if joined {
			call.waiters++
		}
		b.mu.Unlock()

		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for instance list: %w", ctx.Err())
		case <-call.done:
		}
		if joined {
			return call.snap, call.err
		}
		// The call in flight started before this Node was seen: its answer
		// may predate the instance. Wait for the next one.
	}
}

// scheduleLocked creates the next call and starts it once the interval
// since the previous one has passed. The call runs detached from the
// caller's cancellation (other syncs wait for it too), bounded by timeout.
func (b *batcher) scheduleLocked(ctx context.Context) *listCall {
	call := &listCall{done: make(chan struct{})}
	b.inflight = call
	interval := b.interval
	if b.batching != nil && !b.batching() {
		interval = 0
	}
	delay := b.lastStart.Add(interval).Sub(b.clock.Now())
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.timeout+max(delay, 0))
	go func() {
		defer cancel()
		if delay > 0 {
			<-b.clock.After(delay)
		}
		b.mu.Lock()
		call.started = b.clock.Now()
		b.lastStart = call.started
		b.mu.Unlock()

		list, err := b.lister.ListInstances(callCtx)

		b.mu.Lock()
		if err != nil {
			call.err = err // the cloud wrapper names the operation
			b.metrics.lists.WithLabelValues(kit.ResultError).Inc()
			klog.FromContext(ctx).V(2).Info("Listing instances failed", "err", err)
		} else {
			call.snap = newSnapshot(call.started, list)
			if b.last == nil || b.last.started.Before(call.started) {
				b.last = call.snap
			}
			b.metrics.lists.WithLabelValues(kit.ResultSuccess).Inc()
		}
		b.metrics.listWaiters.Observe(float64(call.waiters))
		b.inflight = nil
		b.mu.Unlock()
		close(call.done)
	}()
	return call
}
