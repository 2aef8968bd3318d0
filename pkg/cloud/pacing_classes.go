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

	mu      sync.Mutex
	classes map[string]*pacer
}

func newPacing(p any, ceiling float64, burst int, clk clock.Clock, m *metrics) *pacing {
	classify := func(string) string { return ClassAll }
	if oc, ok := p.(OperationClassifier); ok {
		classify = oc.OperationClass
	}
	return &pacing{provider: p, classify: classify, ceiling: ceiling, burst: burst, clock: clk, metrics: m,
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

// done feeds a call's answer back into its class's pacer.
func (s *pacing) done(pc classPacer, started time.Time, err error) {
	throttled := isThrottle(s.provider, err)
	var retryAfter time.Duration
	if throttled {
		s.metrics.throttled.WithLabelValues(pc.name).Inc()
		retryAfter, _ = RetryAfter(err)
	}
	pc.observe(started, s.clock.Now(), throttled, retryAfter)
	s.metrics.rate.WithLabelValues(pc.name).Set(pc.current())
}
