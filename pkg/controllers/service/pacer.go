package service

import (
	"sync"
	"time"
)

// nodePacer decides when a node pass runs after a node change. A change
// after a quiet period (no pass for at least delay) gets its pass at once,
// so a lone change costs no latency; the changes that follow within delay
// of a pass join one pass at the end of that window, so a burst (autoscaler,
// rolling upgrade) costs each load balancer one update per window rather
// than one per node. The delaying queue keeps one pending entry per key at
// the earliest time asked, so every change of a window lands on the same
// entry.
type nodePacer struct {
	delay time.Duration

	mu sync.Mutex
	// last is when the latest pass was queued or is due.
	last time.Time
	// pending is when a window's pass is due; a change before then joins it.
	pending time.Time
}

func (p *nodePacer) schedule(q queue, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.pending.After(now):
		// Joins the pass already due at the end of this window.
	case !now.Before(p.last.Add(p.delay)):
		p.last = now
		q.Add(nodesKey)
	default:
		p.last = p.last.Add(p.delay)
		p.pending = p.last
		q.AddAfter(nodesKey, p.pending.Sub(now))
	}
}
