package results

import "time"

// RateSample is one reading of a contestant's cloud requests during the
// limit-drop scenario: every request it sent so far, and how many of them
// the cloud answered 429.
type RateSample struct {
	At        time.Time
	Requests  int64
	Throttled int64
}

// UnderTolerance is how far above the limit a window's rate may be and
// still count as under it: the samples are taken a few hundred
// milliseconds apart, so a window's ends are that imprecise.
const UnderTolerance = 1.1

// BackUnder returns how long after drop the contestant went under the
// cloud's lowered limit for good: the earliest sample from which every
// window of length w that ends by raise holds no more requests than the
// cloud's token bucket lets through in it, limit × UnderTolerance
// requests per second plus the bucket's burst, requests answered 429
// included. ok is false when there is no such sample: the contestant still
// sent more than that in the last window before raise.
//
// The cloud's own measure, not the rate alone: a client probing upward, as
// additive increase does, sends a little over the rate until the bucket's
// burst is spent and the first 429 says so; the cloud let that through,
// and it counts as under. A sustained limit rather than the first dip: a
// client that pauses for a Retry-After dips under at once and bursts over
// again. Windows of a few seconds rather than single samples: a burst of
// retries fills a single reading.
func BackUnder(s []RateSample, drop, raise time.Time, limit float64, burst int, w time.Duration) (time.Duration, bool) {
	first := -1
	lastBad := -1
	fits := -1 // the last start whose window ends by raise
	for j := range s {
		if s[j].At.Before(drop) {
			continue
		}
		if first < 0 {
			first = j
		}
		k := j + 1
		for k < len(s) && s[k].At.Sub(s[j].At) < w {
			k++
		}
		if k == len(s) || s[k].At.After(raise) {
			break
		}
		fits = j
		sent := float64(s[k].Requests - s[j].Requests)
		if sent > limit*UnderTolerance*s[k].At.Sub(s[j].At).Seconds()+float64(burst) {
			lastBad = j
		}
	}
	if first < 0 || fits < 0 || lastBad == fits {
		return 0, false
	}
	i := max(first, lastBad+1)
	return s[i].At.Sub(drop), true
}

// Between returns the requests and 429 answers from the last sample at or
// before from to the first at or after to.
func Between(s []RateSample, from, to time.Time) (requests, throttled int64) {
	if len(s) == 0 {
		return 0, 0
	}
	a, b := 0, len(s)-1
	for i := range s {
		if !s[i].At.After(from) {
			a = i
		}
	}
	for i := len(s) - 1; i >= 0; i-- {
		if !s[i].At.Before(to) {
			b = i
		}
	}
	return s[b].Requests - s[a].Requests, s[b].Throttled - s[a].Throttled
}
