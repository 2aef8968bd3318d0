package kittest

import (
	"time"

	"k8s.io/client-go/util/workqueue"
)

// RecordingLimiter wraps a work queue's rate limiter and keeps the last
// delay the queue took from it, so that a test can compare the retry a
// controller quotes with the one the queue really makes.
type RecordingLimiter[T comparable] struct {
	workqueue.TypedRateLimiter[T]
	// Last is the delay of the latest When.
	Last time.Duration
}

// When asks the wrapped limiter and records its answer.
func (r *RecordingLimiter[T]) When(item T) time.Duration {
	r.Last = r.TypedRateLimiter.When(item)
	return r.Last
}
