package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/results"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// rateEvery is how often the limit-drop scenario reads the cloud's
// counters (admin calls: neither counted nor throttled).
const rateEvery = 250 * time.Millisecond

// underWindow is the length of the windows whose requests must stay within
// what the cloud's lowered limit lets through (results.BackUnder).
const underWindow = 3 * time.Second

// limitDropTimeout bounds the wait for every Service to be published: a
// controller that backs a throttled Service off for minutes must not eat
// the benchmark's time budget; the run then counts as failed.
const limitDropTimeout = 4 * time.Minute

// limitDrop runs the limit-drop scenario for every contestant, side by
// side when parallel is set (each on its own cluster and cloud: the limits
// do not interact), one after the other otherwise.
func (e *Env) limitDrop(ctx context.Context, cs []harness.Contestant, rep int, parallel bool) []results.Run {
	out := make([]results.Run, len(cs))
	one := func(i int, c harness.Contestant) {
		r := results.Run{Scenario: LimitDrop, Cloud: results.CloudRealistic, Contestant: c.Name, Rep: rep, Started: time.Now()}
		dir, err := e.runDir(fmt.Sprintf("%s-%s-%d", LimitDrop, c.Name, rep))
		if err == nil {
			err = guarded(func() (err error) {
				r.Figures, r.CloudOps, err = e.limitDropOne(ctx, c, dir, i)
				return err
			})
			err = errors.Join(err, sweep(dir))
		}
		r.Duration = time.Since(r.Started)
		if err != nil {
			r.Error = err.Error()
			e.logf("%s: logs kept in %s", c.Name, dir)
		}
		out[i] = r
	}
	if !parallel {
		for i, c := range cs {
			one(i, c)
		}
		return out
	}
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(i, c)
		}()
	}
	wg.Wait()
	return out
}

// limitDropOne: S LoadBalancer Services are created at once on
// initialized nodes in the realistic cloud; LimitDropAfter after the last
// is created, while the contestant is busy creating load balancers, the
// cloud's limit drops from RateLimit to LowRateLimit requests/s, and
// LimitLowFor later it rises again. Measured from the cloud's counters,
// read every 250 ms: 429 answers in all and while the limit was low, how
// long after the drop the contestant's request rate went under the new
// limit for good (results.BackUnder), and the time until every Service has
// an ingress.
func (e *Env) limitDropOne(ctx context.Context, c harness.Contestant, dir string, pool int) (map[string]float64, map[string]int64, error) {
	nodes := names(harness.NodeName, 1, e.S.LBNodes)
	r, err := e.readyCluster(ctx, dir, results.CloudRealistic, pool, c, nodes, nodes, nil)
	if err != nil {
		return nil, nil, err
	}
	defer r.stop()
	cl, token, ccm := r.cl, r.token, r.ccm
	svcs := names(harness.ServiceName, 1, e.S.Services)
	tr := cl.TrackServices()
	defer tr.Stop()
	m, err := startMeter(ctx, cl, ccm, token)
	if err != nil {
		return nil, nil, err
	}
	rs := &rateSampler{m: m}
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan error, 1)
	go func() { sampled <- rs.run(sctx) }()
	defer stopSampling()

	t0 := time.Now()
	if err := cl.CreateServices(ctx, svcs); err != nil {
		return nil, nil, err
	}
	// The drop is timed from when the last Service exists: creating 300
	// takes under a second on a quiet machine, but many seconds on a busy
	// one, where a drop timed from the first could come after a fast
	// contestant is done.
	drop, raise, err := e.dropAndRaise(ctx, cl, time.Now(), rs)
	if err != nil {
		return nil, nil, err
	}
	last, err := tr.Wait(ctx, svcs, min(e.PhaseTimeout, limitDropTimeout), alive(ccm))
	if err != nil {
		return nil, nil, fmt.Errorf("services published: %w", err)
	}
	if err := rs.take(ctx); err != nil { // a reading after the last publish
		return nil, nil, err
	}
	stopSampling()
	if err := <-sampled; err != nil {
		return nil, nil, err
	}
	figs := map[string]float64{results.FigConverge: last.Sub(t0).Seconds(), results.FigAfterRaise: max(0, last.Sub(raise).Seconds())}
	ops, err := m.finish(ctx, figs)
	if err != nil {
		return nil, nil, err
	}
	samples := rs.samples()
	if e.KeepDirs {
		// The readings behind "back under", for a look at how a contestant
		// paced itself through the drop.
		if err := writeSamples(filepath.Join(dir, "limitdrop-samples.tsv"), samples, drop, raise); err != nil {
			return nil, nil, err
		}
	}
	low := raise.Sub(drop)
	sent, throttled := results.Between(samples, drop, raise)
	figs[results.FigLowThrottle] = float64(throttled)
	figs[results.FigLowRate] = float64(sent) / low.Seconds()
	// Never under the new limit is reported as the whole low phase.
	back, ok := results.BackUnder(samples, drop, raise, e.S.LowRateLimit, e.S.RateBurst, underWindow)
	if !ok {
		back = low
	}
	figs[results.FigBackUnder] = back.Seconds()
	return figs, ops, nil
}

// dropAndRaise lowers the cloud's limit LimitDropAfter after created and raises
// it again LimitLowFor later, and returns when each took effect. Readings
// of the counters are taken right before and right after each change, so
// that the low phase's counts start and end with it.
func (e *Env) dropAndRaise(ctx context.Context, cl *harness.Cluster, created time.Time, rs *rateSampler) (drop, raise time.Time, err error) {
	set := func(at time.Time, limit float64) (time.Time, error) {
		if err := sleepUntil(ctx, at); err != nil {
			return time.Time{}, err
		}
		if err := rs.take(ctx); err != nil {
			return time.Time{}, err
		}
		if _, err := cl.Cloud.UpdateConfig(ctx, api.KnobsPatch{RateLimit: &limit}); err != nil {
			return time.Time{}, fmt.Errorf("set the cloud's rate limit to %g: %w", limit, err)
		}
		now := time.Now()
		return now, rs.take(ctx)
	}
	if drop, err = set(created.Add(e.S.LimitDropAfter), e.S.LowRateLimit); err != nil {
		return drop, raise, err
	}
	raise, err = set(drop.Add(e.S.LimitLowFor), e.S.RateLimit)
	return drop, raise, err
}

func sleepUntil(ctx context.Context, at time.Time) error {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// rateSampler reads a contestant's cloud requests and 429 answers.
type rateSampler struct {
	m  *meter
	mu sync.Mutex
	s  []results.RateSample
}

func (r *rateSampler) take(ctx context.Context) error {
	at := time.Now()
	ops, throttled, err := r.m.cloudOps(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Readings from the loop and from dropAndRaise may finish out of
	// order; keep them sorted by when they were asked.
	s := results.RateSample{At: at, Requests: sum(ops), Throttled: throttled}
	i := len(r.s)
	for i > 0 && r.s[i-1].At.After(at) {
		i--
	}
	r.s = append(r.s[:i], append([]results.RateSample{s}, r.s[i:]...)...)
	return nil
}

func (r *rateSampler) run(ctx context.Context) error {
	t := time.NewTicker(rateEvery)
	defer t.Stop()
	for {
		if err := r.take(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (r *rateSampler) samples() []results.RateSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]results.RateSample(nil), r.s...)
}

// writeSamples writes the rate readings as tab-separated seconds from the
// drop, requests and 429 answers so far, and the requests per second since
// the previous reading; the raise is marked.
func writeSamples(path string, s []results.RateSample, drop, raise time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# drop at 0, raise at %.2f s\nt_s\trequests\tthrottled\trate\n", raise.Sub(drop).Seconds())
	for i, x := range s {
		r := 0.0
		if i > 0 {
			if d := x.At.Sub(s[i-1].At).Seconds(); d > 0 {
				r = float64(x.Requests-s[i-1].Requests) / d
			}
		}
		fmt.Fprintf(&b, "%.2f\t%d\t%d\t%.1f\n", x.At.Sub(drop).Seconds(), x.Requests, x.Throttled, r)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("limit-drop samples: %w", err)
	}
	return nil
}
