package cloudwrap

import (
	"testing"
	"time"
)

// A cloud that never throttled, under no ceiling, never pushes back; a
// throttled answer makes it push back for pushbackMemory; calls waiting for
// an operator's ceiling do too.
func TestPacerPushingBack(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	p := newPacer(0, 0)
	for i := range 100 {
		now := start.Add(time.Duration(i) * 10 * time.Millisecond)
		p.reserve(now)
		p.observe(now, now, false, 0)
	}
	if p.pushingBack(start.Add(time.Second)) {
		t.Fatal("a cloud that never throttled pushes back")
	}
	at := start.Add(2 * time.Second)
	p.observe(at, at, true, 0)
	if !p.pushingBack(at.Add(time.Second)) {
		t.Error("no pushback a second after a throttled answer")
	}
	if p.pushingBack(at.Add(pushbackMemory + time.Second)) {
		t.Error("still pushing back past pushbackMemory, with no other throttled answer")
	}

	ceiling := newPacer(5, 1)
	for i := range 20 {
		ceiling.reserve(start.Add(time.Duration(i) * time.Millisecond))
	}
	if !ceiling.pushingBack(start.Add(50 * time.Millisecond)) {
		t.Error("calls wait for the ceiling, yet no pushback")
	}
}
