package cloudwrap

import (
	"sync"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// OutageThreshold is how many provider calls in a row must fail (with an
// error that is neither "not found" nor a retry the cloud asked for) before
// the next success counts as the cloud recovering. One failing call among
// successes is a bad request, not an outage, and retrying every failed
// object after it would only defeat their backoff.
const OutageThreshold = 3

var _ cloud.RecoveryNotifier = (*Cloud)(nil)

// recovery counts consecutive failed calls and calls its subscribers on
// the first success after at least OutageThreshold of them.
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

// record notes one call's result, as resultOf names it.
func (r *recovery) record(result string) {
	r.mu.Lock()
	var notify []func()
	switch result {
	case ResultError:
		r.failures++
	case ResultSuccess, ResultNotFound:
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
