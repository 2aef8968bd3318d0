package service

import (
	"sync"
	"time"
)

// nodePacer decides when a node pass runs after a node change, so that a
// lone change costs no latency and a burst costs each load balancer one
// update.
//
//   - A change after a quiet period (no change for at least delay) while no
//     other node is joining is lone: its pass is queued at once.
//   - A change that follows another within delay, or that comes while other
//     nodes are joining, is part of a burst. The burst's pass is due once
//     the changes have stopped for settle and no node is still joining; each
//     change moves it later, and it never waits longer than maxHold from the
//     start of the burst, so a stream of changes without end still updates
//     the load balancers every maxHold.
//
// A node is joining from its registration, while it carries the cloud
// provider's uninitialized taint: its initialization is a change that is
// sure to follow, and a pass before it would send the load balancers a set
// that is about to change again. (Nodes that join in a burst register and
// are initialized at different times.) A node counts as joining for at most
// maxHold, so one that is never initialized does not hold passes back.
//
// While a burst is held, a Service's sync leaves a node-only change of its
// load balancer to the burst's pass (see holding): the Services queued by
// a pass that ran before the burst was seen are not updated once per node.
//
// All of this is batching, which pays only where cloud calls are short:
// while the cloud does not push back (batching reports false), a change
// is treated as lone whatever came before it, and only joining nodes hold
// a pass back (their initialization follows at once then, as node
// initialization does not batch either). Passes cannot overlap (one key),
// so changes that come while one runs are still one more pass.
//
// Methods take the time, so tests drive the pacer with a fake clock.
type nodePacer struct {
	delay, settle, maxHold time.Duration
	// batching reports whether the cloud pushes back; nil is always.
	batching func() bool

	mu sync.Mutex
	// lastChange is when the latest change that calls for a pass came.
	lastChange time.Time
	// holdStart is when the current hold began (a joining node or a
	// burst's change); zero when nothing is held.
	holdStart time.Time
	// due is when a burst's pass is due, if no node is joining by then.
	due time.Time
	// joining maps the nodes that carry the uninitialized taint to when
	// they were first seen.
	joining map[string]time.Time
}

// Ratios of the burst timings to the quiet period (Config.NodeSyncDelay).
const (
	settleDivisor    = 4
	maxHoldMultiples = 5
)

func newNodePacer(delay time.Duration, batching func() bool) *nodePacer {
	return &nodePacer{
		delay: delay, settle: delay / settleDivisor, maxHold: maxHoldMultiples * delay, batching: batching,
		joining: map[string]time.Time{},
	}
}

// changed records a change that can alter a load balancer's node set and
// queues or schedules the pass.
func (p *nodePacer) changed(q queue, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	batching := p.batching == nil || p.batching()
	quiet := now.Sub(p.lastChange) >= p.delay
	p.lastChange = now
	if (!batching || (quiet && !p.due.After(now))) && p.joiningLocked(now) == 0 {
		p.holdStart, p.due = time.Time{}, time.Time{}
		q.Add(nodesKey)
		return
	}
	p.startHoldLocked(q, now)
	settle := p.settle
	if !batching {
		// Only the joining nodes hold the pass: their initialization
		// schedules it.
		settle = 0
	}
	p.due = now.Add(settle)
	if end := p.holdStart.Add(p.maxHold); end.Before(p.due) {
		p.due = end
	}
	q.AddAfter(nodesKey, p.due.Sub(now))
}

// joined records whether a node carries the uninitialized taint. A node
// that starts joining holds the passes back; one that stops joining is not
// a change by itself (the caller reports its new providerID or taints).
func (p *nodePacer) joined(q queue, name string, uninitialized bool, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, known := p.joining[name]
	switch {
	case uninitialized && !known:
		p.joining[name] = now
		p.startHoldLocked(q, now)
	case !uninitialized && known:
		delete(p.joining, name)
	}
}

// forget drops a deleted node.
func (p *nodePacer) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.joining, name)
}

// startHoldLocked starts a hold unless one is under way, with a pass
// scheduled at its latest end: the pass that ends the hold if no change
// comes to end it earlier.
func (p *nodePacer) startHoldLocked(q queue, now time.Time) {
	if !p.holdStart.IsZero() && now.Before(p.holdStart.Add(p.maxHold)) {
		return
	}
	p.holdStart = now
	q.AddAfter(nodesKey, p.maxHold)
}

// joiningLocked counts the nodes joining for less than maxHold, dropping
// the others.
func (p *nodePacer) joiningLocked(now time.Time) int {
	for name, since := range p.joining {
		if now.Sub(since) >= p.maxHold {
			delete(p.joining, name)
		}
	}
	return len(p.joining)
}

// holdingLocked reports whether a hold is under way and, if so, until when
// at the latest.
func (p *nodePacer) holdingLocked(now time.Time) (bool, time.Time) {
	if p.holdStart.IsZero() {
		return false, time.Time{}
	}
	end := p.holdStart.Add(p.maxHold)
	if !now.Before(end) || (!p.due.After(now) && p.joiningLocked(now) == 0) {
		return false, time.Time{}
	}
	return true, end
}

// holding reports whether a Service's node-only change should wait for a
// burst's pass.
func (p *nodePacer) holding(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, _ := p.holdingLocked(now)
	return h
}

// wait is asked by a pass when it runs: how much longer it must wait (0:
// run now). A pass that runs ends the hold, so the Services it queues are
// updated.
func (p *nodePacer) wait(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, end := p.holdingLocked(now)
	if !h {
		p.holdStart, p.due = time.Time{}, time.Time{}
		return 0
	}
	if p.due.After(now) {
		return p.due.Sub(now)
	}
	// Only joining nodes hold the pass: their initialization is a change
	// that schedules it; the end of the hold is the fallback.
	return end.Sub(now)
}
