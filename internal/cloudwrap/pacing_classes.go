package cloudwrap

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// pacing holds the pacer of each operation class of one provider.
type pacing struct {
	provider any
	classify func(op string) string
	ceiling  float64
	burst    int
	clock    clock.Clock
	metrics  *metrics
	// reported: the provider reports every throttled answer itself
	// (ThrottleReporter), so done must not count them again.
	reported bool
	// perRequest: the provider's requests are paced through gate
	// (RequestPacer), not its calls.
	perRequest bool
	// onPaced hears of every call or request that waits (Options.OnPaced).
	onPaced func(ctx context.Context, op string, wait time.Duration, why string)
	// pushback hears of every wait and throttled answer; nil hears none.
	pushback *pushback

	mu      sync.Mutex
	classes map[string]*pacer
}

func newPacing(p any, ceiling float64, burst int, clk clock.Clock, m *metrics) *pacing {
	classify := func(string) string { return cloud.ClassAll }
	if oc, ok := p.(cloud.OperationClassifier); ok {
		classify = oc.OperationClass
	}
	_, reported := p.(cloud.ThrottleReporter)
	_, perRequest := p.(cloud.RequestPacer)
	return &pacing{provider: p, classify: classify, reported: reported, perRequest: perRequest,
		ceiling: ceiling, burst: burst, clock: clk, metrics: m, classes: map[string]*pacer{}}
}

// classKey carries the class and operation of the call a provider's
// request serves (a pacedCall).
type classKey struct{}

// pacedCall is the call a provider's request serves.
type pacedCall struct {
	classPacer
	op string
}

// classPacer is the pacer of one class.
type classPacer struct {
	name string
	*pacer
}

func (s *pacing) class(op string) classPacer {
	name := s.classify(op)
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.classes[name]
	if !ok {
		p = newPacer(s.ceiling, s.burst)
		s.classes[name] = p
		s.metrics.rate.WithLabelValues(name).Set(p.rate)
	}
	return classPacer{name: name, pacer: p}
}

// wait blocks until op's class lets a call go, and returns when it went
// and the context to make the call with. A provider paced per request
// (RequestPacer) is not held here: its requests wait in gate, which finds
// the call's class in the context.
func (s *pacing) wait(ctx context.Context, op string) (context.Context, classPacer, time.Time, error) {
	pc := s.class(op)
	if s.perRequest {
		return context.WithValue(ctx, classKey{}, pacedCall{classPacer: pc, op: op}), pc, s.clock.Now(), nil
	}
	at, err := s.reserve(ctx, pacedCall{classPacer: pc, op: op})
	return ctx, pc, at, err
}

// reserve blocks until pc lets one call or request go, and returns when.
// A wait is told to onPaced before it starts, so that a call waiting now
// is known while it waits.
func (s *pacing) reserve(ctx context.Context, pc pacedCall) (time.Time, error) {
	now := s.clock.Now()
	d, why := pc.reserveWhy(now)
	s.metrics.limiterWait.Observe(d.Seconds())
	if d <= 0 {
		return now, nil
	}
	s.markPushback(now)
	if s.onPaced != nil {
		if pc.name != cloud.ClassAll {
			why += " (operation class " + pc.name + ")"
		}
		s.onPaced(ctx, pc.op, d, why)
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return now, ctx.Err()
	case <-t.C():
		return s.clock.Now(), nil
	}
}

// gate is the RequestGate handed to a RequestPacer. A request made outside
// any call the wrapper knows of is paced in the class of an unnamed
// operation.
func (s *pacing) gate(ctx context.Context) (func(throttled bool, retryAfter time.Duration), error) {
	pc, ok := ctx.Value(classKey{}).(pacedCall)
	if !ok {
		pc = pacedCall{classPacer: s.class("")}
	}
	started, err := s.reserve(ctx, pc)
	if err != nil {
		return nil, err
	}
	return func(throttled bool, retryAfter time.Duration) {
		if throttled {
			s.metrics.throttled.WithLabelValues(pc.name).Inc()
			s.markPushback(s.clock.Now())
		}
		pc.observe(started, s.clock.Now(), throttled, retryAfter)
		s.metrics.rate.WithLabelValues(pc.name).Set(pc.current())
	}, nil
}

// throttledElsewhere is what a ThrottleReporter calls: a throttled answer
// of a call not known to the wrapper (a retry inside the provider's
// client) slows every class down.
func (s *pacing) throttledElsewhere(retryAfter time.Duration) {
	s.mu.Lock()
	classes := make(map[string]*pacer, len(s.classes))
	for name, p := range s.classes {
		classes[name] = p
	}
	s.mu.Unlock()
	now := s.clock.Now()
	s.markPushback(now)
	for name, p := range classes {
		s.metrics.throttled.WithLabelValues(name).Inc()
		p.observe(now, now, true, retryAfter)
		s.metrics.rate.WithLabelValues(name).Set(p.current())
	}
}

// done feeds a call's answer back into its class's pacer; a provider paced
// per request has fed each request's already.
func (s *pacing) done(pc classPacer, started time.Time, err error) {
	if s.perRequest {
		return
	}
	throttled := isThrottle(s.provider, err)
	var retryAfter time.Duration
	if throttled && !s.reported {
		s.metrics.throttled.WithLabelValues(pc.name).Inc()
	}
	if throttled {
		retryAfter, _ = cloud.RetryAfter(err)
		s.markPushback(s.clock.Now())
	}
	pc.observe(started, s.clock.Now(), throttled, retryAfter)
	s.metrics.rate.WithLabelValues(pc.name).Set(pc.current())
}

func (s *pacing) markPushback(now time.Time) {
	if s.pushback != nil {
		s.pushback.mark(now)
	}
}
