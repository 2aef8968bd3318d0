package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// single is a scenario that runs one contestant on its own cluster.
type single func(e *Env, ctx context.Context, c harness.Contestant, cloud, dir string) (map[string]float64, map[string]int64, error)

var singles = map[string]single{
	NodeInit: (*Env).nodeInit,
	LB:       (*Env).lb,
	Failover: (*Env).failover,
}

// Clouds returns the cloud modes a scenario runs in: node initialization
// and load balancers also without latency or limits.
func Clouds(scenario string) []string {
	if scenario == NodeInit || scenario == LB {
		return []string{results.CloudRealistic, results.CloudIdeal}
	}
	return []string{results.CloudRealistic}
}

// Run executes the plan: scenarios in order, then cloud modes, then
// repetitions, and within a repetition every contestant in turn. The order
// rotates by one with every repetition, cloud mode and scenario, so that
// no contestant always runs first (or right after another's cluster went
// down) even with one repetition. record is called after every run, so
// that a crash keeps what was measured.
func (e *Env) Run(ctx context.Context, scenarios []string, cs []harness.Contestant, steadyParallel bool, record func(results.Run)) {
	round := 0
	next := func() []harness.Contestant {
		round++
		return rotate(cs, round-1)
	}
	steadyDone := false
	for _, sc := range scenarios {
		switch sc {
		case Steady, Steady5k:
			// Both node counts idle in one phase, side by side.
			if steadyDone {
				continue
			}
			steadyDone = true
			for rep := 1; rep <= e.S.SteadyReps; rep++ {
				_, _ = fmt.Fprintf(e.Log, "== steady rep %d/%d\n", rep, e.S.SteadyReps)
				for _, r := range e.steady(ctx, steadyGroups(scenarios, next(), e.S), rep, steadyParallel) {
					report(e, r)
					record(r)
				}
			}
			continue
		case LimitDrop:
			for rep := 1; rep <= e.S.LimitDropReps; rep++ {
				_, _ = fmt.Fprintf(e.Log, "== %s rep %d/%d\n", sc, rep, e.S.LimitDropReps)
				for _, r := range e.limitDrop(ctx, next(), rep, steadyParallel) {
					report(e, r)
					record(r)
				}
			}
			continue
		}
		for _, cloud := range Clouds(sc) {
			for rep := 1; rep <= e.S.Reps; rep++ {
				for _, c := range next() {
					_, _ = fmt.Fprintf(e.Log, "== %s (%s cloud) rep %d/%d: %s\n", sc, cloud, rep, e.S.Reps, c.Name)
					r := e.runOne(ctx, sc, c, cloud, rep)
					report(e, r)
					record(r)
				}
			}
		}
	}
}

// steadyGroups returns the steady scenarios among scenarios with their
// node counts and contestants, cs in the order given.
func steadyGroups(scenarios []string, cs []harness.Contestant, s results.Settings) []steadyGroup {
	var out []steadyGroup
	if slices.Contains(scenarios, Steady) {
		out = append(out, steadyGroup{scenario: Steady, nodes: s.Nodes, cs: cs})
	}
	if slices.Contains(scenarios, Steady5k) {
		g := steadyGroup{scenario: Steady5k, nodes: s.IdleNodes}
		for _, c := range cs {
			if slices.Contains(idleLargeContestants, c.Name) {
				g.cs = append(g.cs, c)
			}
		}
		if len(g.cs) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// rotate returns xs started at its k-th element (modulo its length),
// wrapping around: rotate([a b c], 1) is [b c a].
func rotate[T any](xs []T, k int) []T {
	if len(xs) == 0 {
		return nil
	}
	k %= len(xs)
	out := make([]T, 0, len(xs))
	return append(append(out, xs[k:]...), xs[:k]...)
}

// guarded runs a run and turns a panic in it into its error, with the
// stack: the run's own deferred cleanup has stopped its processes by then,
// and the next runs go on.
func guarded(run func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return run()
}

// sweep is the check after a run's own cleanup: no process the run started
// may still be running. Any that is gets SIGKILL, and the run fails naming
// it, since a cleanup path missed it.
func sweep(dir string) error {
	left, err := harness.KillLeftovers(dir)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("processes left running after the run's cleanup, now killed: %v", left)
	}
	return nil
}

func report(e *Env, r results.Run) {
	if r.Error != "" {
		_, _ = fmt.Fprintf(e.Log, "   %s %s FAILED after %v: %s\n", r.Scenario, r.Contestant, r.Duration.Round(time.Second), r.Error)
		return
	}
	_, _ = fmt.Fprintf(e.Log, "   %s %s done in %v: %s\n", r.Scenario, r.Contestant, r.Duration.Round(time.Second), brief(r.Figures))
}

func brief(f map[string]float64) string {
	out := ""
	for _, k := range []string{results.FigConverge, results.FigFloorRatio, results.FigAPILimiterWait, results.FigAPILatency, results.FigMachineBusy, results.FigJoin, results.FigFailover, results.FigTakeover, results.FigFirstAction, results.FigDuplicates,
		results.FigCloudCalls, results.FigJoinUpdates, results.FigBackUnder, results.FigLowThrottle, results.FigCloudThrottle,
		results.FigCloudPerHour, results.FigCycle, results.FigWindow, results.FigAPIRequests, results.FigCPU, results.FigIdlePeakRSS, results.FigLeaderRSS, results.FigStandbyRSS, results.FigPeakRSS} {
		if v, ok := f[k]; ok {
			out += fmt.Sprintf("%s=%.4g ", k, v)
		}
	}
	return out
}

func (e *Env) runOne(ctx context.Context, sc string, c harness.Contestant, cloud string, rep int) results.Run {
	r := results.Run{Scenario: sc, Cloud: cloud, Contestant: c.Name, Rep: rep, Started: time.Now()}
	name := fmt.Sprintf("%s-%s-%s-%d", sc, cloud, c.Name, rep)
	dir, err := e.runDir(name)
	if err == nil {
		err = guarded(func() (err error) {
			r.Figures, r.CloudOps, err = singles[sc](e, ctx, c, cloud, dir)
			return err
		})
		err = errors.Join(err, sweep(dir))
	}
	r.Duration = time.Since(r.Started)
	if err != nil {
		r.Error = err.Error()
		_, _ = fmt.Fprintf(e.Log, "   logs kept in %s\n", dir)
	} else if !e.KeepDirs {
		_ = os.RemoveAll(dir)
	}
	return r
}
