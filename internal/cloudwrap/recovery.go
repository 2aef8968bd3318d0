package cloudwrap

import (
	"context"
	"errors"
	"sync"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// OutageThreshold is how many provider calls in a row must fail with the
// cloud's own fault (cloud.IsCloudFault: a timeout, a refused connection, a
// 5xx, a 429) before the next answer counts as the cloud recovering. One
// object's refusal (an invalid argument, a quota, a providerID the provider
// cannot parse) is an answer, not a fault: it neither counts towards an
// outage nor, repeated, fakes one, which would re-queue every failed object
// at each "recovery" and defeat their backoff.
const OutageThreshold = 3

var _ cloud.RecoveryNotifier = (*Cloud)(nil)

// recovery counts consecutive calls the cloud failed and calls its
// subscribers on the first answer after at least OutageThreshold of them.
type recovery struct {
	mu          sync.Mutex
	failures    int
	subscribers []func()
}

// OnRecovered implements RecoveryNotifier.
func (c *Cloud) OnRecovered(fn func()) {
	c.recovery.mu.Lock()
	defer c.recovery.mu.Unlock()
	c.recovery.subscribers = append(c.recovery.subscribers, fn)
}

// record notes one call's result, as resultOf names it, and its error. A
// success, a not-found and an object's own error are the cloud answering;
// a retry the cloud asked for, a call this process canceled and one the
// fence refused (ErrNotLeader) say nothing about its health either way.
func (r *recovery) record(result string, err error) {
	r.mu.Lock()
	var notify []func()
	switch {
	case result == ResultRetry || errors.Is(err, context.Canceled) || errors.Is(err, ErrNotLeader):
	case result == ResultError && cloud.IsCloudFault(err):
		r.failures++
	default:
		if r.failures >= OutageThreshold {
			notify = r.subscribers
		}
		r.failures = 0
	}
	r.mu.Unlock()
	for _, fn := range notify {
		fn()
	}
}
