package explain

import (
	"context"
	"fmt"
	"time"
)

// pacedSum is what the pacer held back of one controller's calls for one
// object since that controller's last sync of it.
type pacedSum struct {
	calls   int
	total   time.Duration
	longest time.Duration
	op, why string
}

// Paced records that a cloud call for the object ctx names waits in the
// client-side pacer: for wait, because of why (the cloud throttled and
// asked to wait, the operator's ceiling, the adaptive limit). It is the
// cloud wrapper's hook, called before the wait, so a call held back now is
// explained while it waits; the controller's next sync of the object says
// how long its calls waited, and why, beside its retry.
func (s *Store) Paced(ctx context.Context, op string, wait time.Duration, why string) {
	ref, ok := ObjectFrom(ctx)
	if s == nil || !ok || wait <= 0 {
		return
	}
	controller := controllerFrom(ctx)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entryLocked(ref, now)
	e.waiting = &Wait{Controller: controller, Operation: op, Since: now, Until: now.Add(wait), Why: bound(why)}
	p := e.paced[controller]
	if p == nil {
		if e.paced == nil {
			e.paced = map[string]*pacedSum{}
		}
		p = &pacedSum{}
		e.paced[controller] = p
	}
	p.calls++
	p.total += wait
	if wait >= p.longest {
		p.longest, p.op, p.why = wait, op, why
	}
}

// takePaced says what the pacer held back of controller's calls since its
// last sync, and starts counting afresh.
func (e *entry) takePaced(controller string) string {
	p := e.paced[controller]
	if p == nil {
		return ""
	}
	delete(e.paced, controller)
	return bound(fmt.Sprintf("paced: %d cloud call(s) waited %s in the client-side pacer, %s the longest (%s): %s",
		p.calls, p.total.Round(time.Millisecond), p.op, p.longest.Round(time.Millisecond), p.why))
}

// waitingAt returns the pacer wait in progress at now, if any.
func (e *entry) waitingAt(now time.Time) *Wait {
	if e.waiting == nil || !now.Before(e.waiting.Until) {
		return nil
	}
	w := *e.waiting
	return &w
}
