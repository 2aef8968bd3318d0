package cloudwrap

import "time"

// rateWindow counts events over the last second in slots of a tenth of a
// second, so a rate is known a tenth of a second after the fact, and from
// the first events on (over the time seen so far), not only after a whole
// second has passed.
type rateWindow struct {
	slots [windowSlots]int
	// head is the start of the newest slot; first is the first event's time.
	head, first time.Time
}

const (
	windowSlots = 10
	windowSlot  = time.Second / windowSlots
)

// add counts one event at t.
func (w *rateWindow) add(t time.Time) {
	w.advance(t)
	if w.first.IsZero() {
		w.first = t
	}
	w.slots[w.index(w.head)]++
}

// advance moves the newest slot to t's, emptying the slots passed over.
func (w *rateWindow) advance(t time.Time) {
	s := t.Truncate(windowSlot)
	if w.head.IsZero() || s.Sub(w.head) >= time.Second {
		w.slots, w.head = [windowSlots]int{}, s
		return
	}
	for w.head.Before(s) {
		w.head = w.head.Add(windowSlot)
		w.slots[w.index(w.head)] = 0
	}
}

func (w *rateWindow) index(t time.Time) int {
	return int(t.UnixNano()/int64(windowSlot)) % windowSlots
}

// rate returns the events per second over the last second at now, and
// over how long a time it was measured (less than a second only when the
// first event came less than a second ago).
func (w *rateWindow) rate(now time.Time) (float64, time.Duration) {
	if w.first.IsZero() {
		return 0, 0
	}
	w.advance(now)
	n := 0
	for _, c := range w.slots {
		n += c
	}
	span := min(time.Second, max(now.Sub(w.first), windowSlot))
	return float64(n) / span.Seconds(), span
}
