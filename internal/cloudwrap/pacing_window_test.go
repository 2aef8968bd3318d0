package cloudwrap

import (
	"testing"
	"time"
)

// The window's rate is over the time seen so far until a second has
// passed, then over the last second, in tenths: older events drop out.
func TestRateWindow(t *testing.T) {
	t.Parallel()
	var w rateWindow
	start := time.Unix(1_700_000_000, 0)
	if r, span := w.rate(start); r != 0 || span != 0 {
		t.Fatalf("empty window: %v over %v", r, span)
	}
	// 10 events in the first 200 ms: 50/s over 200 ms.
	for i := range 10 {
		w.add(start.Add(time.Duration(i) * 20 * time.Millisecond))
	}
	if r, span := w.rate(start.Add(200 * time.Millisecond)); r != 50 || span != 200*time.Millisecond {
		t.Errorf("after 200 ms: %v/s over %v, want 50/s over 200ms", r, span)
	}
	// 20 more, one every 50 ms, over the next second.
	for i := range 20 {
		w.add(start.Add(200*time.Millisecond + time.Duration(i)*50*time.Millisecond))
	}
	// At 1.2 s the window holds the tenth under way and the nine before
	// (from 0.3 s): the first 10 events and the two of 0.2-0.3 s are out.
	if r, span := w.rate(start.Add(1200 * time.Millisecond)); r != 18 || span != time.Second {
		t.Errorf("after 1.2 s: %v/s over %v, want 18/s over 1s", r, span)
	}
	// Long after, nothing remains.
	if r, _ := w.rate(start.Add(10 * time.Second)); r != 0 {
		t.Errorf("after 10 s: %v/s, want 0", r)
	}
}
