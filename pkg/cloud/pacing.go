package cloud

import (
	"errors"
	"math"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// ErrThrottled is what a provider's error wraps when the cloud refused a
// call because the caller exceeds its API rate limit (HTTP 429 and the
// like). The instrumented wrapper then slows every call of the operation's
// class down; it does not for a bare RetryError, which is per object (a
// load balancer still provisioning). A provider wraps it beside its own
// cause, for instance
//
//	fmt.Errorf("%w: %w", cloud.ErrThrottled, err)
var ErrThrottled = errors.New("cloud API rate limit exceeded")

// ThrottleClassifier is an optional extension for a provider whose
// throttling errors neither wrap ErrThrottled nor carry an HTTP 429 status:
// IsThrottle reports whether err, returned by one of its calls, means the
// cloud throttled the caller.
type ThrottleClassifier interface {
	IsThrottle(err error) bool
}

// ThrottleReporter is an optional extension for a provider whose client
// retries throttled requests itself (as many cloud SDKs do): the wrapper
// would see only the throttled answers that exhausted the retries, so it
// hands the provider f to call on every throttled answer, with the cloud's
// Retry-After (0 if none). f is safe for concurrent use.
type ThrottleReporter interface {
	ReportThrottlesTo(f func(retryAfter time.Duration))
}

// OperationClassifier is an optional extension for a provider whose cloud
// limits operations separately (for instance reads and writes): calls of
// different classes are paced independently, so throttled writes do not
// slow reads. OperationClass maps the wrapper's operation name (the method
// name, e.g. "EnsureLoadBalancer", "InstanceMetadata", "ListInstances") to
// a class; ReadWriteClass is a ready-made mapping. Without it every call is
// in one class.
type OperationClassifier interface {
	OperationClass(operation string) string
}

// Operation classes of ReadWriteClass; ClassAll is the class of every call
// when the provider declares none.
const (
	ClassAll   = "all"
	ClassRead  = "read"
	ClassWrite = "write"
)

// ReadWriteClass classes an operation as a write when it changes the cloud
// (Ensure*, Update*, Create*, Delete*) and as a read otherwise.
func ReadWriteClass(operation string) string {
	for _, p := range []string{"Ensure", "Update", "Create", "Delete"} {
		if strings.HasPrefix(operation, p) {
			return ClassWrite
		}
	}
	return ClassRead
}

// isThrottle reports whether err is the cloud throttling the caller:
// ErrThrottled in the chain, an HTTP 429 status carried by an SDK error
// (HTTPStatusCode() int, as AWS' SDK has), or the provider's own verdict.
func isThrottle(p any, err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrThrottled) {
		return true
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() == 429 {
		return true
	}
	if tc, ok := p.(ThrottleClassifier); ok {
		return tc.IsThrottle(err)
	}
	return false
}

// Tuning of the adaptive pacing, as TCP's congestion control: back off
// multiplicatively on throttling, at most once per decreaseInterval (the
// answers to calls already under way come after a decrease and must not
// cause another); probe back up additively each increaseInterval in which
// calls had to wait for the pacer, by a step scaled to the rate where the
// cloud last throttled (a 25th of it, at least minIncrease), so the probes
// above a low limit are as gentle as above a high one. Past that rate the
// cloud's limit has risen, and the step doubles each interval until the
// next throttled answer, so a raised limit is found in a few seconds.
const (
	backoffFactor    = 0.5
	decreaseInterval = time.Second
	increaseInterval = time.Second
	increaseDivisor  = 25
	minIncrease      = 0.5
	// minPacedRate keeps a class moving on a cloud that allows 1 call/s.
	minPacedRate = 0.5
	// maxPause bounds how long a throttled answer's Retry-After pauses a
	// class, against an absurd delay.
	maxPause = 30 * time.Second
)

// pacer is one operation class's adaptive client-side limit. It starts
// without a limit (or at the ceiling), so a cloud that never throttles
// never waits for it; the first throttled answer sets a limit below the
// rate actually sent. Methods take the time, so tests drive it with a fake
// clock.
type pacer struct {
	mu sync.Mutex
	// ceiling is the operator's hard limit (--cloud-api-qps); 0 is none.
	ceiling float64
	burst   int
	// rate is the current limit; 0 is none.
	rate float64
	lim  *rate.Limiter
	// pausedUntil honours a throttled answer's Retry-After.
	pausedUntil time.Time
	lastDecrease,
	lastIncrease time.Time
	// throttledAt is the rate sent when the cloud last throttled; step is
	// the current additive increase.
	throttledAt, step float64
	// waited: some call waited since the last increase, so the limit, not
	// the demand, bounded the rate; only then is probing up meaningful.
	waited bool
	// Calls started per second (this one and the previous), the rate to
	// back off from when the limit is above what was sent.
	second    time.Time
	cur, prev int
}

func newPacer(ceiling float64, burst int) *pacer {
	p := &pacer{ceiling: ceiling, burst: burst}
	if ceiling > 0 {
		p.rate = ceiling
		p.lim = rate.NewLimiter(rate.Limit(ceiling), burst)
	}
	return p
}

// reserve takes a slot for a call at now and returns how long the call
// must wait before it goes.
func (p *pacer) reserve(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := now
	if p.pausedUntil.After(at) {
		at = p.pausedUntil
	}
	if p.lim != nil {
		at = at.Add(p.lim.ReserveN(at, 1).DelayFrom(at))
	}
	if at.After(now) {
		p.waited = true
	}
	p.count(at)
	return at.Sub(now)
}

func (p *pacer) count(at time.Time) {
	switch s := at.Truncate(time.Second); {
	case s.Equal(p.second):
		p.cur++
	case s.Equal(p.second.Add(time.Second)):
		p.second, p.prev, p.cur = s, p.cur, 1
	case s.After(p.second):
		p.second, p.prev, p.cur = s, 0, 1
	}
}

// sent is the rate of calls sent lately, in calls per second.
func (p *pacer) sent() float64 { return float64(max(p.cur, p.prev)) }

// observe adapts the limit to one answer: started is when the call went,
// now when its answer came.
func (p *pacer) observe(started, now time.Time, throttled bool, retryAfter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !throttled {
		if p.rate > 0 && p.waited && now.Sub(p.lastIncrease) >= increaseInterval {
			if p.rate >= p.throttledAt {
				p.step *= 2
			}
			p.setRate(now, p.rate+p.step)
			p.lastIncrease, p.waited = now, false
		}
		return
	}
	if retryAfter > 0 {
		if until := now.Add(min(retryAfter, maxPause)); until.After(p.pausedUntil) {
			p.pausedUntil = until
		}
	}
	if started.Before(p.lastDecrease) || now.Sub(p.lastDecrease) < decreaseInterval {
		return
	}
	base := p.sent()
	if p.rate > 0 && p.rate < base {
		base = p.rate
	}
	p.throttledAt = base
	p.step = max(minIncrease, base/increaseDivisor)
	p.setRate(now, max(minPacedRate, backoffFactor*base))
	p.lastDecrease, p.lastIncrease, p.waited = now, now, false
}

func (p *pacer) setRate(now time.Time, r float64) {
	burst := max(1, int(math.Ceil(r/10))) // a tenth of a second's calls
	if p.ceiling > 0 && r >= p.ceiling {
		r, burst = p.ceiling, p.burst
	}
	p.rate = r
	if p.lim == nil {
		p.lim = rate.NewLimiter(rate.Limit(r), burst)
		return
	}
	p.lim.SetLimitAt(now, rate.Limit(r))
	p.lim.SetBurstAt(now, burst)
}

// current is the limit now in force, 0 when there is none.
func (p *pacer) current() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}
