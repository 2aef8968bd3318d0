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
// list grows). An answer is slow for the machine's own reasons too: with
// every CPU busy, the call waits to be sent and its answer waits to be
// read. So the bar for "slow" is raised with the machine's CPU pressure
// (the kernel's pressure stall information): time the machine spends with
// work waiting for a CPU stretches every answer alike, a cloud that pushes
// back stretches its own far more. Throttling and the pacing's holds
// always count. The controllers batch their work
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
	// With some task waiting for a CPU a share p of the time (CPUPressure),
	// an answer is slow past the bar above times
	// 1/(1-p): what the wait for a CPU alone makes of it, were every step
	// of the call as likely to wait. maxStretch bounds it, so that a
	// machine that is never idle still sees a cloud that slows down five
	// times more. An idle machine reads 0-2 %.
	maxStretch = 5.0
	// pressureAge: how long one reading of the pressure is used.
	pressureAge = time.Second
)

// pushback remembers the last sign of pushback and each operation's
// latency floor. Methods take the time, so tests drive it with a fake
// clock.
type pushback struct {
	// pressure reads the machine's CPU pressure; nil reads none (every
	// slow answer counts).
	pressure CPUPressure

	mu     sync.Mutex
	last   time.Time
	floors map[string]latencyFloor
	// stretch is the bar's factor from the last reading of the pressure,
	// taken at stretchAt.
	stretch   float64
	stretchAt time.Time
}

type latencyFloor struct {
	d  time.Duration
	at time.Time
}

func newPushback(pressure CPUPressure) *pushback {
	return &pushback{pressure: pressure, floors: map[string]latencyFloor{}}
}

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
	slow := ok && !strings.HasPrefix(op, "List") &&
		float64(latency) > float64(slowFactor*f.d+slowMargin)*p.stretchLocked(now)
	if !ok || latency <= f.d || now.Sub(f.at) > floorAge {
		p.floors[op] = latencyFloor{d: latency, at: now}
	}
	if slow {
		p.markLocked(now)
	}
}

// stretchLocked is the factor the machine's CPU pressure puts on the bar
// for a slow answer, reading the pressure at most once per pressureAge; 1
// where the kernel does not say.
func (p *pushback) stretchLocked(now time.Time) float64 {
	if p.pressure == nil {
		return 1
	}
	if p.stretchAt.IsZero() || now.Sub(p.stretchAt) >= pressureAge || now.Before(p.stretchAt) {
		p.stretch, p.stretchAt = 1, now
		if v, ok := p.pressure(); ok {
			p.stretch = min(maxStretch, 1/max(1-v/100, 1/maxStretch))
		}
	}
	return p.stretch
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
