package cloudwrap

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// isThrottle reports whether err is the cloud throttling the caller:
// ErrThrottled in the chain, an HTTP 429 status carried by an SDK error
// (HTTPStatusCode() int, as AWS' SDK has), or the provider's own verdict.
func isThrottle(p any, err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, cloud.ErrThrottled) {
		return true
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() == 429 {
		return true
	}
	if tc, ok := p.(cloud.ThrottleClassifier); ok {
		return tc.IsThrottle(err)
	}
	return false
}

// Tuning of the adaptive pacing, as TCP's congestion control with a
// measured bottleneck (as BBR): on a throttled answer, go to just under the
// rate the cloud accepted over the last second (acceptedFactor of it, and
// at least that share below the limit in force), or, before a second of
// answers is known, halve the rate sent; at most once per decreaseInterval
// (a fifth of it until the accepted rate is known), and never for the
// answer of a call sent before the last decrease. Probe back up additively
// each increaseInterval in which calls had to wait for the pacer, by a step
// scaled to the rate where the cloud last throttled (a 50th of it, at least
// minIncrease), so probes above a low limit are as gentle as above a high
// one; a limit found again where it was found last doubles the pause
// before the next probe (up to maxQuiet), so a stable limit draws few
// 429s. Probing past raisedLimit times that rate without a throttled
// answer means the limit has risen: the step doubles each interval until
// the next throttled answer, so a raised limit is found in a few seconds.
const (
	backoffFactor    = 0.5
	decreaseInterval = time.Second / 2
	increaseInterval = time.Second
	increaseDivisor  = 50
	// raisedLimit: probing this far above the rate where the cloud last
	// throttled without a throttled answer means its limit has risen.
	raisedLimit = 1.5
	minIncrease = 0.5
	// minPacedRate keeps a class moving on a cloud that allows 1 call/s.
	minPacedRate = 0.5
	// maxPause bounds how long a throttled answer's Retry-After pauses a
	// class, against an absurd delay.
	maxPause = 30 * time.Second
	// sameLimit is how close two throttling rates are to be one limit;
	// maxQuiet bounds the pause in probing above a limit found again.
	sameLimit = 0.2
	maxQuiet  = 30 * time.Second
	// acceptedFactor: after a throttled answer, the rate goes to this
	// share of the rate the cloud accepted, measured over at least
	// minAcceptedSpan.
	acceptedFactor  = 0.9
	minAcceptedSpan = time.Second / 2
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
	// quiet is how long after a decrease probing up waits; past raiseAt
	// times throttledAt the step doubles.
	quiet   time.Duration
	raiseAt float64
	// waited: some call waited since the last increase, so the limit, not
	// the demand, bounded the rate; only then is probing up meaningful.
	waited bool
	// slowStart: the limit climbs back from a blind halving, before the
	// rate the cloud accepts was measured; said to whoever waits.
	slowStart bool
	// sentWin counts the calls started lately, the rate to back off from
	// when the limit is above what was sent; okWin counts the answers that
	// were not throttled, the rate the cloud accepted.
	sentWin, okWin rateWindow
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
	d, _ := p.reserveWhy(now)
	return d
}

// reserveWhy is reserve, and says why the call waits ("" when it does
// not): the cloud's Retry-After, the operator's ceiling, or the adaptive
// limit, climbing back after a throttled answer or just under the rate the
// cloud accepted. `stratus explain` tells it for the object waiting.
func (p *pacer) reserveWhy(now time.Time) (time.Duration, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, why := now, ""
	if p.pausedUntil.After(at) {
		at = p.pausedUntil
		why = fmt.Sprintf("the cloud throttled this class of calls and asked to wait (Retry-After, until %s)", at.UTC().Format(time.RFC3339))
	}
	if p.lim != nil {
		if d := p.lim.ReserveN(at, 1).DelayFrom(at); d > 0 {
			at = at.Add(d)
			if why == "" {
				why = p.limitWhyLocked()
			}
		}
	}
	if at.After(now) {
		p.waited = true
	}
	p.sentWin.add(now)
	return at.Sub(now), why
}

// limitWhyLocked says which limit holds calls back.
func (p *pacer) limitWhyLocked() string {
	switch {
	case p.ceiling > 0 && p.rate >= p.ceiling:
		return fmt.Sprintf("the --cloud-api-qps ceiling of %.3g calls/s", p.ceiling)
	case p.slowStart:
		return fmt.Sprintf("slow start: the pacer climbs back at %.3g calls/s after the cloud throttled a burst", p.rate)
	case p.rate > p.throttledAt:
		return fmt.Sprintf("adaptive pacing at %.3g calls/s, probing up from the %.3g calls/s the cloud accepted when it last throttled", p.rate, p.throttledAt)
	default:
		return fmt.Sprintf("adaptive pacing at %.3g calls/s, just under the %.3g calls/s the cloud accepted when it last throttled", p.rate, p.throttledAt)
	}
}

// observe adapts the limit to one answer: started is when the call went,
// now when its answer came.
func (p *pacer) observe(started, now time.Time, throttled bool, retryAfter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !throttled {
		p.okWin.add(now)
		if p.rate > 0 && p.waited && now.Sub(p.lastIncrease) >= increaseInterval && now.Sub(p.lastDecrease) >= p.quiet {
			if p.rate >= p.raiseAt*p.throttledAt {
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
	if started.Before(p.lastDecrease) || now.Sub(p.lastDecrease) < p.decreaseInterval(now) {
		return
	}
	next, limit, measured := p.backoff(now)
	// The rates measured are the cloud's limit only when the pacer held
	// calls back (they waited for it): otherwise they are the demand of the
	// moment, and the throttled answer may be another client's doing on a
	// shared account. Then the limit found is no more than a hint: probing
	// resumes after one interval and speeds up past it, as it does above a
	// limit the cloud has raised.
	bound := p.lim != nil && p.waited
	switch {
	case !bound, !measured:
		// Not bound: see above. Not measured: the rate was halved
		// blindly, before a second of answers said what the cloud
		// accepts (the first calls' burst), so the limit is likely far
		// above it: climb back as after a hint, doubling the step, until
		// a throttled answer measures it.
		p.quiet, p.raiseAt = increaseInterval, 1
	case p.throttledAt > 0 && math.Abs(limit-p.throttledAt) <= sameLimit*p.throttledAt:
		// A cloud that throttles again where it did last time has not
		// changed its limit: probing above it only draws 429s, so the
		// next probe waits twice as long, up to maxQuiet.
		p.quiet, p.raiseAt = min(maxQuiet, max(increaseInterval, 2*p.quiet)), raisedLimit
	default:
		p.quiet, p.raiseAt = increaseInterval, raisedLimit
	}
	p.step = max(minIncrease, limit/increaseDivisor)
	if !measured {
		// Climbing back from a blind halving starts at a quarter of the
		// rate and doubles, as TCP's slow start: the limit is likely a
		// multiple of it.
		p.step = max(p.step, limit/4)
	}
	p.throttledAt, p.slowStart = limit, !measured
	p.setRate(now, max(minPacedRate, next))
	p.lastDecrease, p.lastIncrease, p.waited = now, now, false
}

// decreaseInterval is the least time between two decreases: shorter until
// the rate the cloud accepts is known, so that the first throttled answers,
// which come within milliseconds of the first calls and say little about
// the limit, are followed by quick halvings rather than half a second of
// calls far above it.
func (p *pacer) decreaseInterval(now time.Time) time.Duration {
	if _, span := p.okWin.rate(now); span < minAcceptedSpan {
		return decreaseInterval / 5
	}
	return decreaseInterval
}

// backoff returns the rate to go down to after a throttled answer, and the
// best estimate of the cloud's limit. The rate the cloud accepted over the
// last second is its limit, measured: the pacer goes just under it, so a
// cloud that throttles at L is then sent about L, not L/2 as a blind
// multiplicative decrease would (half the throughput until the additive
// probes climb back). Without a second of answers (the first throttled
// answers come within milliseconds of the first calls), it halves the rate
// sent; measured is false then.
func (p *pacer) backoff(now time.Time) (next, limit float64, measured bool) {
	base, _ := p.sentWin.rate(now)
	if p.rate > 0 && p.rate < base {
		base = p.rate
	}
	// Unmeasured, the rate sent says nothing of the limit but that it is
	// lower: the halved rate is the estimate, which the climb starts from.
	next, limit = backoffFactor*base, backoffFactor*base
	if ok, span := p.okWin.rate(now); span >= minAcceptedSpan && ok > 0 {
		limit, next, measured = ok, acceptedFactor*ok, true
	}
	// A throttled answer under a limit already set means that limit is too
	// high, whatever the estimate (a cloud's bucket lets more than its rate
	// through for a while): always go down by a share.
	if p.rate > 0 {
		next = min(next, acceptedFactor*p.rate)
	}
	return next, limit, measured
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
