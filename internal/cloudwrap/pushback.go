package cloudwrap

import (
	"strings"
	"sync"
	"time"
)

// The cloud pushes back when it throttles, when a call waits for the
// client-side pacing, or when an operation's latency grows well past the
// fastest answer it gave lately: a provider's own rate limiter, or a cloud
// under load, shows as that (lists excepted: they take longer as what they
// list grows). The controllers batch their work
// while it does (node initialization's shared lists, the load balancers'
// node passes) and act at once while it does not: batching saves calls
// where calls are what is short, and only adds waiting where they are not.
const (
	// pushbackMemory is how long one sign of pushback counts: a burst of
	// work that drew it is likely followed by more of the same.
	pushbackMemory = 30 * time.Second
	// An answer is slow when it took more than slowFactor times the
	// operation's floor plus slowMargin: the margin keeps a fast cloud's
	// jitter (a few milliseconds against a floor of one) from counting.
	slowFactor = 2
	slowMargin = 50 * time.Millisecond
	// floorAge: an operation's floor older than this is replaced by the
	// next answer, so that a cloud that moved further away is not taken
	// for one that pushes back for ever.
	floorAge = 5 * time.Minute
)

// pushback remembers the last sign of pushback and each operation's
// latency floor. Methods take the time, so tests drive it with a fake
// clock.
type pushback struct {
	mu     sync.Mutex
	last   time.Time
	floors map[string]latencyFloor
}

type latencyFloor struct {
	d  time.Duration
	at time.Time
}

func newPushback() *pushback { return &pushback{floors: map[string]latencyFloor{}} }

// mark records a sign of pushback at now.
func (p *pushback) mark(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.markLocked(now)
}

func (p *pushback) markLocked(now time.Time) {
	if now.After(p.last) {
		p.last = now
	}
}

// answered records one answer of op and its latency (the pacing marks
// throttled answers and waits itself).
func (p *pushback) answered(now time.Time, op string, latency time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.floors[op]
	// A list's answer grows with what it lists, so its latency says
	// nothing of the cloud's load; the other operations' does.
	slow := ok && !strings.HasPrefix(op, "List") && latency > slowFactor*f.d+slowMargin
	if !ok || latency <= f.d || now.Sub(f.at) > floorAge {
		p.floors[op] = latencyFloor{d: latency, at: now}
	}
	if slow {
		p.markLocked(now)
	}
}

// active reports whether the cloud pushed back within pushbackMemory.
func (p *pushback) active(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.last.IsZero() && now.Sub(p.last) < pushbackMemory
}

// Pushback reports whether the cloud pushed back lately: a throttled
// answer, a call held by the client-side pacing, or an answer much slower
// than the operation's usual. Controllers batch while it does.
func (c *Cloud) Pushback() bool { return c.pushback.active(c.pacing.clock.Now()) }
