package route

import (
	"maps"
	"net/netip"
	"sync"
	"time"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
)

// backoff remembers failed route creations so that a full route table does
// not turn every pass into a burst of doomed CreateRoute calls. Entries are
// keyed by destination CIDR and target node: a CIDR that moves to another
// node starts afresh.
type backoff struct {
	mu      sync.Mutex
	initial time.Duration
	max     time.Duration
	entries map[routeKey]backoffEntry
}

type routeKey struct {
	cidr netip.Prefix
	node string
}

type backoffEntry struct {
	failures int
	retryAt  time.Time
	// outage: the last failure was the cloud's (cloud.IsCloudFault), not
	// the route's own refusal; a recovery retries it at once.
	outage bool
}

func newBackoff(initial, maxDelay time.Duration) *backoff {
	return &backoff{initial: initial, max: maxDelay, entries: map[routeKey]backoffEntry{}}
}

// ready reports whether k may be tried at now.
func (b *backoff) ready(k routeKey, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[k]
	return !ok || !now.Before(e.retryAt)
}

// failed records a failure at now, the cloud's (outage) or the route's
// own, and returns when k may be tried again.
func (b *backoff) failed(k routeKey, now time.Time, outage bool) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[k]
	e.failures++
	e.outage = outage
	// The queue's formula, so that a route's retries space out as a
	// failing key's do: initial after the first failure, doubled since.
	e.retryAt = now.Add(kit.ExponentialDelay(b.initial, b.max, e.failures-1))
	b.entries[k] = e
	return e.retryAt
}

// entry returns k's failures and retry time, if it failed.
func (b *backoff) entry(k routeKey) (backoffEntry, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[k]
	return e, ok
}

func (b *backoff) succeeded(k routeKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, k)
}

// reset forgets every failure: a deleted route may have made room.
func (b *backoff) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.entries)
}

// resetOutage forgets the failures the cloud caused, now that it answers
// again, and reports whether there were any. A route the cloud refused on
// its own account (a quota, a conflict) keeps its backoff.
func (b *backoff) resetOutage() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.entries)
	maps.DeleteFunc(b.entries, func(_ routeKey, e backoffEntry) bool { return e.outage })
	return len(b.entries) < n
}

// retain drops entries for routes no Node wants any more and returns how
// many remain.
func (b *backoff) retain(wanted map[routeKey]bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if !wanted[k] {
			delete(b.entries, k)
		}
	}
	return len(b.entries)
}
