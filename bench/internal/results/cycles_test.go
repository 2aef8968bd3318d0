package results

import (
	"math"
	"testing"
	"time"
)

// series builds one sample a second for n seconds; calls(t) returns the
// requests of each operation made in the second ending at t, cpu the CPU
// seconds used per second.
func series(n int, cpu float64, calls func(sec int) map[string]int64) []Sample {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := []Sample{{At: t0, Ops: map[string]int64{}}}
	for sec := 1; sec <= n; sec++ {
		prev := out[len(out)-1]
		s := Sample{At: t0.Add(time.Duration(sec) * time.Second), Ops: map[string]int64{}, CPU: prev.CPU + cpu}
		for op, v := range prev.Ops {
			s.Ops[op] = v
		}
		for op, v := range calls(sec) {
			s.Ops[op] += v
		}
		out = append(out, s)
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

// A contestant whose pass takes 100 s and then pauses 300 s: period 400 s,
// 10 requests a second in the pass, 1,000 per pass, 9,000 per hour. A
// 300-s window that opens just before a pass holds the whole pass and
// reads 12,000 per hour; whole cycles give the true rate.
func TestAnalyzeSteadyMeasuresWholeCycles(t *testing.T) {
	pass := func(sec int) map[string]int64 {
		if (sec-1)%400 >= 50 && (sec-1)%400 < 150 {
			return map[string]int64{"GetInstance": 10}
		}
		return nil
	}
	r := AnalyzeSteady(series(900, 0.01, pass))
	if len(r.Ops) != 1 || r.Main != "GetInstance" {
		t.Fatalf("ops %+v main %q, want GetInstance alone", r.Ops, r.Main)
	}
	o := r.Ops[0]
	if !o.Whole || o.Starts != 3 || o.Period != 400*time.Second {
		t.Fatalf("got %+v, want 3 starts 400 s apart", o)
	}
	if !near(r.CallsPerHour, 9000) {
		t.Fatalf("calls per hour %v, want 9000", r.CallsPerHour)
	}
	if !r.CPUWhole || !near(r.CPUPerHour, 36) {
		t.Fatalf("CPU per hour %v (whole %v), want 36 over whole cycles", r.CPUPerHour, r.CPUWhole)
	}
	if !r.Complete() {
		t.Fatal("not complete with a whole cycle of every operation")
	}
	// The same contestant seen through a 300-s window holding one pass.
	short := AnalyzeSteady(series(300, 0.01, pass))
	if short.Complete() || short.Ops[0].Whole || !near(short.CallsPerHour, 12000) {
		t.Fatalf("a window with one pass: %+v, want the window's extrapolation 12000 and not complete", short)
	}
}

// A pass under way when the window opens is not a start: its beginning
// was not seen, so the cycle measured from it would be short.
func TestAnalyzeSteadySkipsAPassUnderWayAtTheStart(t *testing.T) {
	r := AnalyzeSteady(series(700, 0, func(sec int) map[string]int64 {
		if sec <= 20 || (sec > 320 && sec <= 340) || (sec > 640 && sec <= 660) {
			return map[string]int64{"GetInstance": 5}
		}
		return nil
	}))
	o := r.Ops[0]
	if o.Starts != 2 || o.Period != 320*time.Second || !near(o.PerHour, 100*3600.0/320) {
		t.Fatalf("got %+v, want 2 starts 320 s apart and 100 calls per cycle", o)
	}
}

// Two loops with their own periods each get their own cycles; the window
// is complete only when both have one.
func TestAnalyzeSteadyPerOperation(t *testing.T) {
	calls := func(sec int) map[string]int64 {
		m := map[string]int64{}
		if sec%300 == 40 {
			m["ListInstances"] = 1
		}
		if sec%600 == 100 {
			m["ListLoadBalancers"] = 2
		}
		return m
	}
	r := AnalyzeSteady(series(650, 0, calls))
	if r.Complete() {
		t.Fatalf("complete after one ListLoadBalancers pass: %+v", r.Ops)
	}
	r = AnalyzeSteady(series(1250, 0, calls))
	if !r.Complete() {
		t.Fatalf("not complete with two passes of each: %+v", r.Ops)
	}
	if !near(r.CallsPerHour, 12+12) {
		t.Fatalf("calls per hour %v, want 12 ListInstances + 12 ListLoadBalancers", r.CallsPerHour)
	}
}

func TestAnalyzeSteadyWithoutRequests(t *testing.T) {
	r := AnalyzeSteady(series(100, 0.5, func(int) map[string]int64 { return nil }))
	if r.Main != "" || r.CallsPerHour != 0 || !r.Complete() || r.CPUWhole || !near(r.CPUPerHour, 1800) {
		t.Fatalf("got %+v, want no operations and the window's CPU rate", r)
	}
}

// A window that opens during a pass frames its cycle between pass ends:
// it need not wait for two more starts.
func TestAnalyzeSteadyFramesCyclesBetweenPassEnds(t *testing.T) {
	// Passes of 100 s every 400 s, the window opening 50 s into one.
	r := AnalyzeSteady(series(500, 0, func(sec int) map[string]int64 {
		if (sec+49)%400 < 100 {
			return map[string]int64{"GetInstance": 10}
		}
		return nil
	}))
	o := r.Ops[0]
	if !o.Whole || o.Starts != 1 || o.Period != 400*time.Second || !near(o.PerHour, 9000) {
		t.Fatalf("got %+v, want one cycle of 400 s between pass ends, 9000 per hour", o)
	}
}
