package service

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// endpointPacer decides when an endpoint change reaches the cloud, per
// Service, with the node pacer's rule: a change after a quiet period is
// lone and its sync is queued at once; changes closer together are a
// burst (a rolling update, a scale-up), whose sync is due once they have
// stopped for settle, each change moving it later, never later than
// maxHold after the burst's first change. So a rolling update of a
// hundred pods is a few calls, not one per pod condition, and a lone pod
// becoming ready costs no wait.
//
// Unlike node passes, bursts are paced whether or not the cloud pushes
// back: they are per Service and the hold is short, while every pod of a
// rolling update would otherwise cost a cloud call or two.
type endpointPacer struct {
	delay, settle, maxHold time.Duration

	mu     sync.Mutex
	bursts map[types.NamespacedName]*endpointBurst
}

type endpointBurst struct {
	// last is the latest change; start the burst's first (zero between
	// bursts); due when the burst's sync is due.
	last, start, due time.Time
}

func newEndpointPacer(delay time.Duration) *endpointPacer {
	return &endpointPacer{delay: delay, settle: delay / settleDivisor, maxHold: maxHoldMultiples * delay,
		bursts: map[types.NamespacedName]*endpointBurst{}}
}

// changed records an endpoint change of k's Service and queues its sync,
// at once or when the burst is due.
func (p *endpointPacer) changed(q queue, k key, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.bursts[k.Service]
	if b == nil || (now.Sub(b.last) >= p.delay && !b.due.After(now)) {
		p.bursts[k.Service] = &endpointBurst{last: now}
		q.Add(k)
		return
	}
	if b.start.IsZero() || !b.due.After(now) {
		// The previous burst's sync is due (or done): this change starts
		// the next one, so a stream of changes is synced every maxHold.
		b.start = now
	}
	b.last = now
	b.due = now.Add(p.settle)
	if end := b.start.Add(p.maxHold); end.Before(b.due) {
		b.due = end
	}
	q.AddAfter(k, b.due.Sub(now))
}

// wait reports how long an endpoint-only change of the Service should
// still wait for its burst to settle: 0 when it may go now, which ends the
// burst. The queue keeps a key's earliest due time, so a sync that comes
// early (queued by the burst's first change) must queue the Service again
// for the remainder itself.
func (p *endpointPacer) wait(svc types.NamespacedName, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.bursts[svc]
	if b == nil {
		return 0
	}
	if b.due.After(now) {
		return b.due.Sub(now)
	}
	b.start, b.due = time.Time{}, time.Time{}
	return 0
}

// forget drops a Service's record (it no longer targets endpoints, or is
// gone).
func (p *endpointPacer) forget(svc types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.bursts, svc)
}
