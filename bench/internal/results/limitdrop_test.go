package results

import (
	"testing"
	"time"
)

// rates builds a sample every 250 ms from per-second request rates, with
// throttled answers at thr per second.
func rates(t0 time.Time, perSec []float64, thr float64) []RateSample {
	out := []RateSample{{At: t0}}
	var req, th float64
	for i, r := range perSec {
		for q := 1; q <= 4; q++ {
			req += r / 4
			th += thr / 4
			out = append(out, RateSample{At: t0.Add(time.Duration(i)*time.Second + time.Duration(q)*250*time.Millisecond), Requests: int64(req), Throttled: int64(th)})
		}
	}
	return out
}

func TestBackUnderSustained(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	drop, raise := t0.Add(5*time.Second), t0.Add(35*time.Second)
	// 50/s until 3 s after the drop, then 8/s with a probe to 12/s for a
	// second: the 5-s averages stay under 11.
	per := make([]float64, 40)
	for i := range per {
		switch {
		case i < 8:
			per[i] = 50
		case i == 20:
			per[i] = 12
		default:
			per[i] = 8
		}
	}
	got, ok := BackUnder(rates(t0, per, 0), drop, raise, 10, 0, 5*time.Second)
	if !ok || got < 2500*time.Millisecond || got > 3500*time.Millisecond {
		t.Fatalf("back under after %v (ok %v), want about 3 s", got, ok)
	}
}

func TestBackUnderIgnoresADipBetweenBursts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	drop, raise := t0, t0.Add(30*time.Second)
	// Bursts of 40/s every other 3 s, idle between: the idle seconds are
	// under the limit, the bursts' averages are not.
	per := make([]float64, 32)
	for i := range per {
		if (i/3)%2 == 0 && i < 18 {
			per[i] = 40
		} else if i >= 18 {
			per[i] = 9
		}
	}
	got, ok := BackUnder(rates(t0, per, 0), drop, raise, 10, 0, 5*time.Second)
	if !ok || got < 13*time.Second || got > 18*time.Second {
		t.Fatalf("back under after %v (ok %v), want after the last burst (13–18 s)", got, ok)
	}
}

// A probe a little over the rate for a few seconds stays within the
// bucket's burst and counts as under; the same probe against a cloud
// without a burst does not.
func TestBackUnderCountsTheBucketsBurst(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	drop, raise := t0, t0.Add(30*time.Second)
	per := make([]float64, 32)
	for i := range per {
		switch {
		case i < 2:
			per[i] = 50
		case i >= 14 && i < 18: // 4 s at 12/s: 8 over a rate of 10
			per[i] = 12
		default:
			per[i] = 9
		}
	}
	got, ok := BackUnder(rates(t0, per, 0), drop, raise, 10, 10, 3*time.Second)
	if !ok || got > 3*time.Second {
		t.Fatalf("with a burst of 10: back under after %v (ok %v), want by 3 s, the probe within the burst", got, ok)
	}
	got, ok = BackUnder(rates(t0, per, 0), drop, raise, 10, 0, 3*time.Second)
	if !ok || got < 15*time.Second {
		t.Fatalf("without a burst: back under after %v (ok %v), want after the probe (15 s or later)", got, ok)
	}
}

func TestBackUnderNever(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	per := make([]float64, 40)
	for i := range per {
		per[i] = 30
	}
	if got, ok := BackUnder(rates(t0, per, 0), t0.Add(5*time.Second), t0.Add(35*time.Second), 10, 10, 5*time.Second); ok {
		t.Fatalf("back under after %v at 30/s against a limit of 10", got)
	}
}

func TestBetween(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := rates(t0, []float64{40, 40, 40, 40}, 8)
	req, thr := Between(s, t0.Add(time.Second), t0.Add(3*time.Second))
	if req != 80 || thr != 16 {
		t.Fatalf("Between = %d requests, %d throttled; want 80, 16", req, thr)
	}
}
