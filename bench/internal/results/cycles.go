package results

import (
	"sort"
	"time"
)

// Sample is one reading taken during a steady window: the cloud requests
// by operation counted since the window opened, and the contestant's CPU
// seconds.
type Sample struct {
	At  time.Time
	Ops map[string]int64
	CPU float64
}

// CycleGap is the quiet time that separates two refresh passes. Inside a
// pass, requests follow one another within seconds (a 429's Retry-After
// included); between passes, both contestants pause for minutes
// (--node-status-update-frequency, 5 minutes).
const CycleGap = 30 * time.Second

// OpCycles is what the samples say about one operation.
type OpCycles struct {
	Op string
	// Starts is the number of pass starts seen: a first request after
	// at least CycleGap of quiet inside the window. A pass under way when
	// the window opened is not a start.
	Starts int
	// Whole is true when the window holds a whole cycle, from one pass
	// start to a later one or from one pass end to a later one: PerHour is
	// then the rate over whole cycles; else it is the window's count
	// extrapolated to one hour.
	Whole bool
	// Period is the mean time from one pass start to the next (whole
	// cycles only).
	Period time.Duration
	// from and to index the samples that frame the whole cycles.
	from, to int
	PerHour  float64
}

// SteadyRates is the analysis of one contestant's steady window.
type SteadyRates struct {
	Ops []OpCycles
	// CallsPerHour sums the operations' rates.
	CallsPerHour float64
	// Main is the operation with the highest rate (the node refresh), ""
	// when there were no requests; CPUPerHour is measured over its whole
	// cycles when it has any, over the window otherwise.
	Main       string
	CPUPerHour float64
	// CPUWhole says whether CPUPerHour covers whole cycles of Main.
	CPUWhole bool
}

// Complete reports whether every operation that made a request has at
// least one whole cycle: the window can close.
func (r SteadyRates) Complete() bool {
	for _, o := range r.Ops {
		if !o.Whole {
			return false
		}
	}
	return true
}

// Cycle returns the main operation's period and whether it was measured.
func (r SteadyRates) Cycle() (time.Duration, bool) {
	for _, o := range r.Ops {
		if o.Op == r.Main {
			return o.Period, o.Whole
		}
	}
	return 0, false
}

// AnalyzeSteady finds each operation's refresh passes in samples (taken
// in time order, the first when the window opened) and computes the hourly
// rates over whole cycles where the window holds one: a rate from one
// pass start to a later one counts every pass and every pause in between
// once, however long a pass takes, where a fixed window extrapolated to
// one hour would count a pass that straddles its end partly or not at all.
func AnalyzeSteady(samples []Sample) SteadyRates {
	var out SteadyRates
	if len(samples) < 2 {
		return out
	}
	first, last := samples[0], samples[len(samples)-1]
	window := last.At.Sub(first.At)
	ops := map[string]bool{}
	for _, s := range samples {
		for op, n := range s.Ops {
			if n > first.Ops[op] {
				ops[op] = true
			}
		}
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	for _, op := range names {
		o := opCycles(samples, op)
		if !o.Whole && window > 0 {
			o.PerHour = float64(last.Ops[op]-first.Ops[op]) * float64(time.Hour) / float64(window)
		}
		out.Ops = append(out.Ops, o)
		out.CallsPerHour += o.PerHour
		if out.Main == "" || o.PerHour > out.mainRate() {
			out.Main = op
		}
	}
	if window > 0 {
		out.CPUPerHour = (last.CPU - first.CPU) * float64(time.Hour) / float64(window)
	}
	for _, o := range out.Ops {
		if o.Op == out.Main && o.Whole {
			span := samples[o.to].At.Sub(samples[o.from].At)
			out.CPUPerHour = (samples[o.to].CPU - samples[o.from].CPU) * float64(time.Hour) / float64(span)
			out.CPUWhole = true
		}
	}
	return out
}

func (r SteadyRates) mainRate() float64 {
	for _, o := range r.Ops {
		if o.Op == r.Main {
			return o.PerHour
		}
	}
	return 0
}

// opCycles finds the passes of op and frames whole cycles between two
// pass starts or two pass ends, whichever pair spans longer. A request is
// seen in the interval (samples[i-1], samples[i]]: a start is dated
// samples[i-1], the last reading before the pass, an end samples[i], the
// first reading after its last request, so that the counts between two
// starts or two ends hold whole passes. An end counts once CycleGap of
// quiet followed it inside the window; the pass under way when the window
// opened has an end but no start, the one under way when it closed a start
// but no end.
func opCycles(samples []Sample, op string) OpCycles {
	o := OpCycles{Op: op}
	var starts, ends []int
	quietSince := samples[0].At // no request seen since
	lastActive := -1
	for i := 1; i < len(samples); i++ {
		if samples[i].Ops[op] <= samples[i-1].Ops[op] {
			continue
		}
		if samples[i-1].At.Sub(quietSince) >= CycleGap {
			starts = append(starts, i-1)
			if lastActive >= 0 {
				ends = append(ends, lastActive)
			}
		}
		quietSince = samples[i].At
		lastActive = i
	}
	if lastActive >= 0 && samples[len(samples)-1].At.Sub(samples[lastActive].At) >= CycleGap {
		ends = append(ends, lastActive)
	}
	o.Starts = len(starts)
	span := func(b []int) time.Duration {
		if len(b) < 2 {
			return 0
		}
		return samples[b[len(b)-1]].At.Sub(samples[b[0]].At)
	}
	b := starts
	if span(ends) > span(starts) {
		b = ends
	}
	if span(b) <= 0 {
		return o
	}
	o.Whole = true
	o.from, o.to = b[0], b[len(b)-1]
	o.Period = span(b) / time.Duration(len(b)-1)
	o.PerHour = float64(samples[o.to].Ops[op]-samples[o.from].Ops[op]) * float64(time.Hour) / float64(span(b))
	return o
}
