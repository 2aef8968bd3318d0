package cloud

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
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

	mu      sync.Mutex
	classes map[string]*pacer
}

func newPacing(p any, ceiling float64, burst int, clk clock.Clock, m *metrics) *pacing {
	classify := func(string) string { return ClassAll }
	if oc, ok := p.(OperationClassifier); ok {
		classify = oc.OperationClass
	}
	_, reported := p.(ThrottleReporter)
	return &pacing{provider: p, classify: classify, reported: reported, ceiling: ceiling, burst: burst, clock: clk, metrics: m,
		classes: map[string]*pacer{}}
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

// wait blocks until op's class lets a call go, and returns when it went.
func (s *pacing) wait(ctx context.Context, op string) (classPacer, time.Time, error) {
	pc := s.class(op)
	now := s.clock.Now()
	d := pc.reserve(now)
	s.metrics.limiterWait.Observe(d.Seconds())
	if d <= 0 {
		return pc, now, nil
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return pc, now, ctx.Err()
	case <-t.C():
		return pc, s.clock.Now(), nil
	}
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
	for name, p := range classes {
		s.metrics.throttled.WithLabelValues(name).Inc()
		p.observe(now, now, true, retryAfter)
		s.metrics.rate.WithLabelValues(name).Set(p.current())
	}
}

// done feeds a call's answer back into its class's pacer.
func (s *pacing) done(pc classPacer, started time.Time, err error) {
	throttled := isThrottle(s.provider, err)
	var retryAfter time.Duration
	if throttled && !s.reported {
		s.metrics.throttled.WithLabelValues(pc.name).Inc()
	}
	if throttled {
		retryAfter, _ = RetryAfter(err)
	}
	pc.observe(started, s.clock.Now(), throttled, retryAfter)
	s.metrics.rate.WithLabelValues(pc.name).Set(pc.current())
}
