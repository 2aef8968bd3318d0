package scenario

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/results"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// steadySettle is the pause between convergence and the window, so that
// the tail of the setup (queued retries, status patches) is not counted.
const steadySettle = 30 * time.Second

// steadyMinWindow is the shortest window: the pause both contestants take
// after a node refresh pass, so that a contestant whose loops have not
// sent a request yet gets a chance to.
const steadyMinWindow = 5 * time.Minute

// sampleEvery is how often the window reads the cloud's counters and the
// contestant's CPU time and resident set.
const sampleEvery = time.Second

// steadyRun is one contestant's prepared steady-state cluster.
type steadyRun struct {
	*ready
	scenario string
	nodes    int
	c        harness.Contestant
	dir      string
	m        *meter
	err      error
	figs     map[string]float64
	ops      map[string]int64
	started  time.Time
}

func (r *steadyRun) stop() {
	if r.ready != nil {
		r.ready.stop()
	}
}

// prepareSteady brings a cluster to the idle state: N initialized nodes
// and S published Services whose load balancers hold every node.
func (e *Env) prepareSteady(ctx context.Context, r *steadyRun, pool int) error {
	nodes := names(harness.NodeName, 1, r.nodes)
	labels := beyondBackendLimit(nodes, api.MaxBackends)
	var err error
	if r.ready, err = e.readyCluster(ctx, r.dir, results.CloudRealistic, pool, r.c, nodes, nodes, labels); err != nil {
		return err
	}
	ids := make(map[string]string, len(r.ids))
	for n, id := range r.ids {
		if labels[n] == nil {
			ids[n] = id
		}
	}
	svcs := names(harness.ServiceName, 1, e.S.SteadyServices())
	tr := r.cl.TrackServices()
	defer tr.Stop()
	if err := r.cl.CreateServices(ctx, svcs); err != nil {
		return err
	}
	if _, err := tr.Wait(ctx, svcs, e.PhaseTimeout, alive(r.ccm)); err != nil {
		return fmt.Errorf("services published: %w", err)
	}
	want := make([]string, 0, len(ids))
	for _, id := range ids {
		want = append(want, id)
	}
	if _, err := e.waitBackends(ctx, r.cl, len(svcs), want, 2*time.Second, e.PhaseTimeout, alive(r.ccm)); err != nil {
		return err
	}
	return nil
}

// steadyGroup is a steady scenario's contestants and node count.
// beyondBackendLimit labels the nodes past the first limit with
// node.kubernetes.io/exclude-from-external-load-balancers, which both
// contestants honour: the cloud lets a load balancer hold at most limit
// backends (localcloud's api.MaxBackends, 5,000; real clouds cap a pool
// lower), so at 10,000 nodes every load balancer holds the first 5,000.
func beyondBackendLimit(nodes []string, limit int) map[string]map[string]string {
	if len(nodes) <= limit {
		return nil
	}
	out := make(map[string]map[string]string, len(nodes)-limit)
	for _, n := range nodes[limit:] {
		out[n] = map[string]string{corev1.LabelNodeExcludeBalancers: "true"}
	}
	return out
}

type steadyGroup struct {
	scenario string
	nodes    int
	cs       []harness.Contestant
}

// steady prepares every contestant's cluster of every group and measures
// them side by side when parallel is set, each until its window closes
// (the figures are counts and CPU seconds, which side-by-side runs barely
// disturb), or prepares and measures one after the other otherwise.
func (e *Env) steady(ctx context.Context, groups []steadyGroup, rep int, parallel bool) []results.Run {
	var runs []*steadyRun
	for _, g := range groups {
		for _, c := range g.cs {
			runs = append(runs, &steadyRun{scenario: g.scenario, nodes: g.nodes, c: c,
				dir: filepath.Join(e.WorkDir, fmt.Sprintf("%s-%s-%d", g.scenario, c.Name, rep))})
		}
	}
	one := func(i int, r *steadyRun, before func()) {
		r.started = time.Now()
		if err := guarded(func() error {
			defer r.stop()
			e.logf("steady: preparing %s (%d nodes, %d Services)", r.c.Name, r.nodes, e.S.SteadyServices())
			if _, r.err = e.runDir(filepath.Base(r.dir)); r.err != nil {
				return nil
			}
			if r.err = e.prepareSteady(ctx, r, i); r.err != nil {
				return nil
			}
			before()
			if r.m, r.err = startMeter(ctx, r.cl, r.ccm, r.token); r.err != nil {
				return nil
			}
			e.window(ctx, r)
			return nil
		}); err != nil {
			r.err = err
		}
	}
	if !parallel {
		for i, r := range runs {
			one(i, r, func() {
				time.Sleep(steadySettle)
				e.logf("steady: measuring %s at %d nodes for up to %v", r.c.Name, r.nodes, e.S.SteadyWindow)
			})
		}
	} else {
		// Preparation is mostly waiting on cloud latency, so the clusters
		// are prepared side by side too; the windows open once all are
		// ready, and each closes (and its cluster stops) on its own.
		var ready, wg sync.WaitGroup
		ready.Add(len(runs))
		for i, r := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				done := false
				defer func() {
					if !done {
						ready.Done()
					}
				}()
				one(i, r, func() {
					done = true
					ready.Done()
					ready.Wait()
					time.Sleep(steadySettle)
				})
			}()
		}
		ready.Wait()
		e.logf("steady: measuring every contestant side by side for up to %v", e.S.SteadyWindow)
		wg.Wait()
	}
	out := make([]results.Run, len(runs))
	for i, r := range runs {
		out[i] = results.Run{Scenario: r.scenario, Cloud: results.CloudRealistic, Contestant: r.c.Name, Rep: rep,
			Figures: r.figs, CloudOps: r.ops, Started: r.started, Duration: time.Since(r.started)}
		if err := errors.Join(r.err, sweep(r.dir)); err != nil {
			out[i].Error = err.Error()
		}
	}
	return out
}

// window samples the cloud's counters, the CPU time and the resident set
// every second until the window holds a whole refresh cycle of every
// operation the contestant sends (and steadyMinWindow has passed), or for
// SteadyWindow at most, and records the figures: per-hour cloud requests
// and CPU over whole cycles (AnalyzeSteady), API requests over the window.
func (e *Env) window(ctx context.Context, r *steadyRun) {
	pid := r.ccm.Pid()
	var samples []results.Sample
	idlePeak := 0.0
	t0 := time.Now()
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	var rates results.SteadyRates
	for {
		s, err := r.m.sample(ctx, pid)
		if err == nil {
			var rss float64
			rss, err = harness.RSSMiB(pid)
			idlePeak = max(idlePeak, rss)
		}
		if err == nil {
			err = alive(r.ccm)()
		}
		if err != nil {
			r.err = err
			return
		}
		samples = append(samples, s)
		rates = results.AnalyzeSteady(samples)
		if windowDone(time.Since(t0), min(steadyMinWindow, e.S.SteadyWindow), e.S.SteadyWindow, rates) {
			break
		}
		select {
		case <-ctx.Done():
			r.err = ctx.Err()
			return
		case <-tick.C:
		}
	}
	window := samples[len(samples)-1].At.Sub(samples[0].At)
	r.figs = map[string]float64{results.FigIdlePeakRSS: idlePeak, results.FigWindow: window.Seconds()}
	if _, r.err = r.m.finish(ctx, r.figs); r.err != nil {
		return
	}
	// The kernel updates VmHWM lazily (per-thread RSS counters are folded
	// in now and then), so a VmRSS sample can exceed it by a few hundred
	// KiB; the whole run's peak is at least the window's.
	r.figs[results.FigPeakRSS] = max(r.figs[results.FigPeakRSS], idlePeak)
	r.figs[results.FigCloudPerHour] = rates.CallsPerHour
	r.figs[results.FigCPUPerHour] = rates.CPUPerHour
	r.figs[results.FigAPIPerHour] = r.figs[results.FigAPIRequests] * float64(time.Hour) / float64(window)
	if p, ok := rates.Cycle(); ok {
		r.figs[results.FigCycle] = p.Seconds()
	}
	r.ops = map[string]int64{}
	for _, o := range rates.Ops {
		r.ops[o.Op] = int64(math.Round(o.PerHour))
	}
	e.logf("steady: %s at %d nodes: window %v, %s", r.c.Name, r.nodes, window.Round(time.Second), describeCycles(rates))
}

// windowDone says whether a window open for elapsed can close: once it
// holds a whole cycle of every operation and least has passed, or at most.
func windowDone(elapsed, least, most time.Duration, r results.SteadyRates) bool {
	return elapsed >= most || (elapsed >= least && r.Complete())
}

func describeCycles(r results.SteadyRates) string {
	if len(r.Ops) == 0 {
		return "no cloud requests"
	}
	out := ""
	for _, o := range r.Ops {
		if o.Whole {
			out += fmt.Sprintf("%s %.0f/h over whole cycles of %v; ", o.Op, o.PerHour, o.Period.Round(time.Second))
		} else {
			out += fmt.Sprintf("%s %.0f/h extrapolated (no whole cycle); ", o.Op, o.PerHour)
		}
	}
	return out
}
