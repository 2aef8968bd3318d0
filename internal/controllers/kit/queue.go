package kit

import (
	"context"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Queue captures a controller's work queue when the controller starts, for
// code that adds work outside the event handlers: a pass that queues
// objects, a recovery from an outage, a released resource waking those that
// wait for it. Before the controller starts there is no queue and nothing
// to wake: Add then drops the items, and Get reports false.
type Queue[T comparable] struct {
	p atomic.Pointer[workqueue.TypedRateLimitingInterface[T]]
	// first are queued when the controller starts.
	first []T
}

// Source returns the source to pass to WatchesRawSource; it captures the
// queue and adds first, the items the controller's first passes need.
func (q *Queue[T]) Source(first ...T) source.TypedSource[T] {
	q.first = first
	return source.TypedFunc[T](func(_ context.Context, wq workqueue.TypedRateLimitingInterface[T]) error {
		q.Set(wq)
		for _, it := range q.first {
			wq.Add(it)
		}
		return nil
	})
}

// Set captures wq; tests that drive a controller without a manager use it.
func (q *Queue[T]) Set(wq workqueue.TypedRateLimitingInterface[T]) { q.p.Store(&wq) }

// Get returns the captured queue, or false before the controller started.
func (q *Queue[T]) Get() (workqueue.TypedRateLimitingInterface[T], bool) {
	p := q.p.Load()
	if p == nil {
		return nil, false
	}
	return *p, true
}

// Add queues items, and reports whether there was a queue to add them to.
func (q *Queue[T]) Add(items ...T) bool {
	wq, ok := q.Get()
	if !ok {
		return false
	}
	for _, it := range items {
		wq.Add(it)
	}
	return true
}
