package scenario

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// steadySettle is the pause between convergence and the window, so that
// the tail of the setup (queued retries, status patches) is not counted.
const steadySettle = 30 * time.Second

// steadyRun is one contestant's prepared steady-state cluster.
type steadyRun struct {
	c     harness.Contestant
	dir   string
	cl    *harness.Cluster
	ccm   *harness.CCM
	token string
	m     *meter
	err   error
	figs  map[string]float64
	ops   map[string]int64
}

func (r *steadyRun) stop() {
	if r.ccm != nil {
		r.ccm.Stop(30 * time.Second)
	}
	if r.cl != nil {
		r.cl.Stop()
	}
}

// prepareSteady brings a cluster to the idle state: N initialized nodes
// and S published Services whose load balancers hold every node.
func (e *Env) prepareSteady(ctx context.Context, r *steadyRun, pool int) error {
	var err error
	if r.cl, r.token, err = e.startCluster(ctx, r.dir, results.CloudRealistic, pool); err != nil {
		return err
	}
	nodes := names(harness.NodeName, 1, e.S.Nodes)
	ids, err := r.cl.CreateInstances(ctx, nodes)
	if err != nil {
		return err
	}
	if r.ccm, err = e.startLeader(ctx, r.cl, r.c, "a"); err != nil {
		return err
	}
	if _, err := e.initNodes(ctx, r.cl, nodes, r.ccm); err != nil {
		return err
	}
	svcs := names(harness.ServiceName, 1, e.S.Services)
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
	if _, err := e.waitBackends(ctx, r.cl, e.S.Services, want, 2*time.Second, e.PhaseTimeout, alive(r.ccm)); err != nil {
		return err
	}
	return nil
}

// steady prepares every contestant's cluster and measures all of them over
// one common window when parallel is set (the figures are counts and CPU
// seconds, which side-by-side runs barely disturb), or prepares and
// measures one after the other otherwise.
func (e *Env) steady(ctx context.Context, cs []harness.Contestant, rep int, parallel bool) []results.Run {
	runs := make([]*steadyRun, len(cs))
	for i, c := range cs {
		runs[i] = &steadyRun{c: c, dir: filepath.Join(e.WorkDir, fmt.Sprintf("steady-%s-%d", c.Name, rep))}
	}
	out := make([]results.Run, len(cs))
	started := make([]time.Time, len(cs))
	measure := func(rs []*steadyRun) {
		var wg sync.WaitGroup
		for _, r := range rs {
			if r.err != nil {
				continue
			}
			if r.m, r.err = startMeter(ctx, r.cl, r.ccm, r.token); r.err != nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.window(ctx, r)
			}()
		}
		wg.Wait()
	}
	prepare := func(i int, r *steadyRun) {
		started[i] = time.Now()
		e.logf("steady: preparing %s (%d nodes, %d Services)", r.c.Name, e.S.Nodes, e.S.Services)
		if _, err := e.runDir(filepath.Base(r.dir)); err != nil {
			r.err = err
			return
		}
		r.err = e.prepareSteady(ctx, r, i)
	}
	if !parallel {
		for i, r := range runs {
			prepare(i, r)
			if r.err == nil {
				time.Sleep(steadySettle)
				e.logf("steady: measuring %s for %v", r.c.Name, e.S.SteadyWindow)
				measure([]*steadyRun{r})
			}
			r.stop()
		}
	} else {
		// Preparation is mostly waiting on cloud latency, so the clusters
		// are prepared side by side too; the window starts once all are.
		var wg sync.WaitGroup
		for i, r := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				prepare(i, r)
			}()
		}
		wg.Wait()
		time.Sleep(steadySettle)
		e.logf("steady: measuring every contestant side by side for %v", e.S.SteadyWindow)
		measure(runs)
		for _, r := range runs {
			r.stop()
		}
	}
	for i, r := range runs {
		out[i] = results.Run{Scenario: Steady, Cloud: results.CloudRealistic, Contestant: r.c.Name, Rep: rep,
			Figures: r.figs, CloudOps: r.ops, Started: started[i], Duration: time.Since(started[i])}
		if r.err != nil {
			out[i].Error = r.err.Error()
		}
	}
	return out
}

// rssEvery is how often the window samples the resident set.
const rssEvery = time.Second

// window idles for the steady window and records the figures, with the
// per-hour extrapolation.
func (e *Env) window(ctx context.Context, r *steadyRun) {
	pid := r.ccm.Pid()
	idlePeak, err := peakDuring(ctx, e.S.SteadyWindow, rssEvery, func() (float64, error) { return harness.RSSMiB(pid) })
	if err != nil {
		r.err = err
		return
	}
	if err := alive(r.ccm)(); err != nil {
		r.err = err
		return
	}
	r.figs = map[string]float64{results.FigIdlePeakRSS: idlePeak}
	if r.ops, r.err = r.m.finish(ctx, r.figs); r.err != nil {
		return
	}
	perHour := float64(time.Hour) / float64(e.S.SteadyWindow)
	r.figs[results.FigCloudPerHour] = r.figs[results.FigCloudCalls] * perHour
	r.figs[results.FigAPIPerHour] = r.figs[results.FigAPIRequests] * perHour
	r.figs[results.FigCPUPerHour] = r.figs[results.FigCPU] * perHour
}

// peakDuring samples read at the start, every interval and at the end of
// d, and returns the highest value. VmHWM cannot serve here: it holds the
// peak since the process started, setup included, while the idle window
// wants its own. A spike shorter than every can fall between samples.
func peakDuring(ctx context.Context, d, every time.Duration, read func() (float64, error)) (float64, error) {
	peak, err := read()
	if err != nil {
		return 0, err
	}
	end := time.NewTimer(d)
	defer end.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-tick.C:
		case <-end.C:
			v, err := read()
			if err != nil {
				return 0, err
			}
			return max(peak, v), nil
		}
		v, err := read()
		if err != nil {
			return 0, err
		}
		peak = max(peak, v)
	}
}
