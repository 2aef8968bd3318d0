package cloudwrap

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// throttlingCloud is a fake cloud that answers 429 above its limit (a token
// bucket, as real clouds keep), on a simulated clock.
type throttlingCloud struct {
	lim *rate.Limiter
}

func (c *throttlingCloud) setLimit(at time.Time, qps float64) {
	c.lim.SetLimitAt(at, rate.Limit(qps))
	c.lim.SetBurstAt(at, int(qps))
}

// simEvent is a worker ready to reserve (done false) or a call answered.
type simEvent struct {
	at        time.Time
	done      bool
	started   time.Time
	throttled bool
}

type simEvents []simEvent

func (h simEvents) Len() int           { return len(h) }
func (h simEvents) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h simEvents) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *simEvents) Push(x any)        { *h = append(*h, x.(simEvent)) }
func (h *simEvents) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// simulation drives a pacer with workers that always have a call to make
// (the controllers during a burst) against a throttling cloud, on a fake
// clock, and records per simulated second what was sent and throttled.
type simulation struct {
	p       *pacer
	cloud   *throttlingCloud
	start   time.Time
	events  simEvents
	latency time.Duration
	// sent and throttled per simulated second.
	sent, throttled map[int]int
}

func newSimulation(p *pacer, cloudQPS float64, workers int) *simulation {
	start := time.Unix(1_700_000_000, 0)
	s := &simulation{p: p, cloud: &throttlingCloud{lim: rate.NewLimiter(rate.Limit(cloudQPS), int(cloudQPS))},
		start: start, latency: 20 * time.Millisecond, sent: map[int]int{}, throttled: map[int]int{}}
	for range workers {
		heap.Push(&s.events, simEvent{at: start})
	}
	return s
}

// runUntil processes events up to the simulated offset end.
func (s *simulation) runUntil(end time.Duration) {
	for s.events.Len() > 0 && s.events[0].at.Before(s.start.Add(end)) {
		e := heap.Pop(&s.events).(simEvent)
		if e.done {
			var retryAfter time.Duration
			if e.throttled {
				retryAfter = 100 * time.Millisecond
			}
			s.p.observe(e.started, e.at, e.throttled, retryAfter)
			heap.Push(&s.events, simEvent{at: e.at})
			continue
		}
		went := e.at.Add(s.p.reserve(e.at))
		throttled := !s.cloud.lim.AllowN(went, 1)
		sec := int(went.Sub(s.start) / time.Second)
		s.sent[sec]++
		if throttled {
			s.throttled[sec]++
		}
		heap.Push(&s.events, simEvent{at: went.Add(s.latency), done: true, started: went, throttled: throttled})
	}
}

// over sums sent and throttled calls in the simulated seconds [from, to).
func (s *simulation) over(from, to int) (sent, throttled int) {
	for sec := from; sec < to; sec++ {
		sent += s.sent[sec]
		throttled += s.throttled[sec]
	}
	return sent, throttled
}

func TestPacingConvergesUnderTheLimit(t *testing.T) {
	t.Parallel()
	s := newSimulation(newPacer(0, 0), 50, 10)
	s.runUntil(60 * time.Second)
	if got := s.p.current(); got == 0 {
		t.Fatal("no limit after throttled answers")
	}
	sent, throttled := s.over(20, 60)
	perSecond := float64(sent) / 40
	if perSecond > 50 || perSecond < 25 {
		t.Errorf("sent %.1f calls/s over seconds 20-60 against a limit of 50, want between 25 and 50", perSecond)
	}
	if float64(throttled) > 0.02*float64(sent) {
		t.Errorf("%d of %d calls throttled once converged, want at most 2%%", throttled, sent)
	}
}

// Against a cloud that throttles at 50 calls/s with a bucket of 10 (as
// localcloud's realistic setting), 1,000 calls take no more than 1.1 × the
// 20 s the limit allows, with few throttled answers: the pacer goes to just
// under the rate the cloud accepted rather than halving and climbing back
// (which took 35 s). Most of the throttled answers are the first calls',
// sent before any limit is known. Lower and higher limits are reached
// within 1.4 × their floor.
func TestPacingReachesTheCloudsFloor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit    float64
		maxRatio float64
	}{{50, 1.1}, {10, 1.4}, {200, 1.4}} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			s := newSimulation(newPacer(0, 0), tc.limit, 10)
			s.cloud.lim.SetBurst(10)
			want := int(20 * tc.limit) // 20 s at the limit
			accepted, throttled, secs := 0, 0, 0
			for ; accepted < want && secs < 60; secs++ {
				s.runUntil(time.Duration(secs+1) * time.Second)
				accepted += s.sent[secs] - s.throttled[secs]
				throttled += s.throttled[secs]
			}
			if ratio := float64(secs) / 20; ratio > tc.maxRatio {
				t.Errorf("%d calls accepted after %d s: %.2f × the 20 s floor, want at most %.1f", want, secs, ratio, tc.maxRatio)
			}
			if tc.limit != 50 {
				return
			}
			if _, after := s.over(1, secs); float64(after) > 0.01*float64(accepted) {
				t.Errorf("%d throttled answers after the first second (%d calls), want at most 1%%", after, accepted)
			}
			if float64(throttled) > 0.02*float64(accepted) {
				t.Errorf("%d throttled answers in all (%d calls), want at most 2%%", throttled, accepted)
			}
		})
	}
}

func TestPacingBacksOffWhenTheLimitDropsAndRecovers(t *testing.T) {
	t.Parallel()
	s := newSimulation(newPacer(0, 0), 50, 10)
	s.runUntil(30 * time.Second)
	s.cloud.setLimit(s.start.Add(30*time.Second), 10)
	s.runUntil(60 * time.Second)
	// From 5 s after the drop, Stratus sends no more than the new limit
	// allows (its rate plus the bucket's burst of 10) and draws few 429s.
	if _, throttled := s.over(30, 35); throttled == 0 {
		t.Error("no throttled answers after the drop: the cloud did not lower its limit")
	}
	sent, throttled := s.over(35, 60)
	if sent > 10*25+10 {
		t.Errorf("sent %d calls over seconds 35-60, more than a limit of 10/s allows (260)", sent)
	}
	if sent < 5*25 {
		t.Errorf("sent %d calls over seconds 35-60 under a limit of 10, want at least half the limit", sent)
	}
	if float64(throttled) > 0.05*float64(sent) {
		t.Errorf("%d of %d calls throttled over seconds 35-60, want at most 5%%", throttled, sent)
	}

	// The cloud raises its limit again: the pacer probes back up.
	s.cloud.setLimit(s.start.Add(60*time.Second), 50)
	s.runUntil(120 * time.Second)
	if sent, _ := s.over(100, 120); float64(sent)/20 < 25 {
		t.Errorf("sent %.1f calls/s over seconds 100-120 after the limit rose to 50, want at least 25", float64(sent)/20)
	}
}

func TestPacingHonoursTheCeiling(t *testing.T) {
	t.Parallel()
	s := newSimulation(newPacer(20, 20), 1000, 10)
	s.runUntil(30 * time.Second)
	// The first second may spend the burst; afterwards, at most the ceiling.
	for sec := 1; sec < 30; sec++ {
		if s.sent[sec] > 20 {
			t.Errorf("second %d: sent %d calls over a ceiling of 20", sec, s.sent[sec])
		}
	}
	if sent, _ := s.over(1, 30); sent < 29*19 {
		t.Errorf("sent %d calls in 29 s under a ceiling of 20 on an unthrottled cloud, want about 20/s", sent)
	}
	if got := s.p.current(); got != 20 {
		t.Errorf("limit %v, want the ceiling 20", got)
	}
}

func TestPacingWithoutThrottlingSetsNoLimit(t *testing.T) {
	t.Parallel()
	s := newSimulation(newPacer(0, 0), 1e6, 10)
	s.runUntil(10 * time.Second)
	if got := s.p.current(); got != 0 {
		t.Errorf("limit %v on a cloud that never throttled, want none", got)
	}
	// 10 workers, 20 ms per call: 500 calls/s, unpaced.
	if sent, _ := s.over(0, 10); sent != 5000 {
		t.Errorf("sent %d calls in 10 s, want 5000 (never held back)", sent)
	}
}

// httpError is an SDK error carrying the HTTP status, as AWS' SDK's does.
type httpError struct{ status int }

func (e *httpError) Error() string       { return fmt.Sprintf("HTTP %d", e.status) }
func (e *httpError) HTTPStatusCode() int { return e.status }

var errProviderSlowDown = errors.New("provider: slow down")

// classifyingProvider declares its own throttling error and read/write
// classes.
type classifyingProvider struct{ stubProvider }

func (p *classifyingProvider) IsThrottle(err error) bool { return errors.Is(err, errProviderSlowDown) }
func (p *classifyingProvider) OperationClass(op string) string {
	if op == "InstanceShutdown" { // stands in for a write here
		return cloud.ClassWrite
	}
	return cloud.ReadWriteClass(op)
}

// Throttled answers slow the class down; a RetryError about one object (a
// load balancer still provisioning) or any other error does not.
func TestWrapperRecognisesThrottling(t *testing.T) {
	t.Parallel()
	retry := cloudproviderapi.NewRetryError("load balancer provisioning", time.Second)
	for name, tc := range map[string]struct {
		err       error
		throttled bool
	}{
		"ErrThrottled in a RetryError": {fmt.Errorf("%w: %w", cloudproviderapi.NewRetryError("throttled", time.Second), cloud.ErrThrottled), true},
		"HTTP 429":                     {fmt.Errorf("call: %w", &httpError{status: 429}), true},
		"provider's IsThrottle":        {errProviderSlowDown, true},
		"RetryError of one object":     {retry, false},
		"HTTP 500":                     {&httpError{status: 500}, false},
		"other error":                  {errors.New("boom"), false},
	} {
		t.Run(name, func(t *testing.T) {
			p := &classifyingProvider{stubProvider{err: tc.err}}
			clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
			c, reg := instrument(t, p, Options{Clock: clk})
			i, _ := c.InstancesV2()
			_, _ = i.InstanceExists(context.Background(), &corev1.Node{})
			want := 0.0
			if tc.throttled {
				want = 1
			}
			if got := testutil.ToFloat64(c.metrics.throttled.WithLabelValues(cloud.ClassRead)); got != want {
				t.Errorf("%s{class=read} = %v, want %v", MetricThrottledTotal, got, want)
			}
			limited := c.pacing.class("InstanceExists").current() > 0
			if limited != tc.throttled {
				t.Errorf("read class limited = %v after %v, want %v", limited, tc.err, tc.throttled)
			}
			if c.pacing.class("InstanceShutdown").current() != 0 {
				t.Error("a throttled read slowed the write class")
			}
			if n, err := testutil.GatherAndCount(reg, MetricPacingRate); err != nil || n == 0 {
				t.Errorf("%s not exported: %d series, %v", MetricPacingRate, n, err)
			}
		})
	}
}

// A throttled answer's Retry-After holds the class's next call back until
// it has passed.
func TestWrapperHonoursThrottledRetryAfter(t *testing.T) {
	t.Parallel()
	p := &stubProvider{err: fmt.Errorf("%w: %w", cloudproviderapi.NewRetryError("throttled", 2*time.Second), cloud.ErrThrottled)}
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	c, _ := instrument(t, p, Options{Clock: clk})
	i, _ := c.InstancesV2()
	ctx := context.Background()
	_, _ = i.InstanceExists(ctx, &corev1.Node{})
	p.err = nil
	done := make(chan error, 1)
	go func() {
		_, err := i.InstanceExists(ctx, &corev1.Node{})
		done <- err
	}()
	waitForWaiter(t, clk)
	clk.Step(time.Second)
	select {
	case err := <-done:
		t.Fatalf("a call went 1 s into a 2 s Retry-After (%v)", err)
	default:
	}
	clk.Step(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("call after the Retry-After: %v", err)
	}
	if got := p.calls.Load(); got != 2 {
		t.Errorf("provider reached %d times, want 2", got)
	}
}

func waitForWaiter(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return clk.HasWaiters(), nil })
	if err != nil {
		t.Fatal("no call waiting for the pacer")
	}
}

// A throttled answer while the pacer held nothing back (a trickle of
// calls; another client spent the shared limit) sets a limit at that
// trickle's rate, but it is only a hint: once the demand rises, the pacer
// climbs to the cloud's real limit within seconds, not at the gentle pace
// of probes above a limit it measured.
func TestPacingRecoversFromAThrottleWhileIdle(t *testing.T) {
	t.Parallel()
	s := newSimulation(newPacer(0, 0), 50, 0)
	for i := range 50 { // 10 calls/s for 5 s
		at := s.start.Add(time.Duration(i) * 100 * time.Millisecond)
		s.p.reserve(at)
		s.p.observe(at, at.Add(s.latency), false, 0)
	}
	at := s.start.Add(5 * time.Second)
	s.p.observe(at, at, true, 0)
	if r := s.p.current(); r == 0 || r > 10 {
		t.Fatalf("limit %v after a throttled answer at 10 calls/s, want at most 10", r)
	}
	for range 10 {
		heap.Push(&s.events, simEvent{at: at})
	}
	s.runUntil(30 * time.Second)
	if sent, throttled := s.over(20, 30); float64(sent-throttled)/10 < 40 {
		t.Errorf("%.1f calls/s accepted 15-25 s after the throttled answer, want at least 40 of the cloud's 50", float64(sent-throttled)/10)
	}
}
