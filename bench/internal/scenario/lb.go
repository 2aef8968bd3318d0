package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// backendPoll is how often the runner checks for joined nodes. A check
// reads localcloud's admin counters, which are neither rate limited nor
// counted; the load balancers are listed (one request, subtracted from the
// counters but taken from the same rate limit as the contestant's) only
// once the contestant has made an UpdateLoadBalancer call per load
// balancer and made another since the last listing, or every
// backendListFloor: listing every poll took 2 of the cloud's 50
// requests/s and drew 429s for whichever contestant used the rest.
const (
	backendPoll      = 500 * time.Millisecond
	backendListFloor = 5 * time.Second
)

// joinTimeout bounds the wait for joined nodes: upstream's node sync can
// lose an update for good when the cloud throttles it (it records the node
// set before the update succeeds), and a run that never converges must not
// eat the benchmark's time budget.
const joinTimeout = 3 * time.Minute

// lb: S LoadBalancer Services are created at once on initialized nodes;
// then J nodes join within two seconds. Measured: time until every Service
// has an ingress, time until every load balancer's backends include the
// joined nodes, and UpdateLoadBalancer calls after the join.
func (e *Env) lb(ctx context.Context, c harness.Contestant, cloud, dir string) (map[string]float64, map[string]int64, error) {
	first := names(harness.NodeName, 1, e.S.LBNodes)
	joined := names(harness.NodeName, 1+e.S.LBNodes, e.S.JoinNodes)
	r, err := e.readyCluster(ctx, dir, cloud, 0, c, append(append([]string{}, first...), joined...), first, nil)
	if err != nil {
		return nil, nil, err
	}
	defer r.stop()
	cl, token, ccm, ids := r.cl, r.token, r.ccm, r.ids
	svcs := names(harness.ServiceName, 1, e.S.Services)
	tr := cl.TrackServices()
	defer tr.Stop()
	m, err := startMeter(ctx, cl, ccm, token)
	if err != nil {
		return nil, nil, err
	}
	t0 := time.Now()
	if err := cl.CreateServices(ctx, svcs); err != nil {
		return nil, nil, err
	}
	last, err := tr.Wait(ctx, svcs, e.PhaseTimeout, alive(ccm))
	if err != nil {
		return nil, nil, fmt.Errorf("services published: %w", err)
	}
	figs := map[string]float64{results.FigConverge: last.Sub(t0).Seconds()}
	if w, err := m.apiWrites(ctx); err == nil && w > 0 {
		figs[results.FigAPIWritesPerService] = w / float64(len(svcs))
	}
	before, _, err := m.cloudOps(ctx)
	if err != nil {
		return nil, nil, err
	}
	joinedAt, err := e.join(ctx, cl, joined, ids, ccm)
	if err != nil {
		return nil, nil, err
	}
	figs[results.FigJoin] = joinedAt.Seconds()
	ops, err := m.finish(ctx, figs)
	if err != nil {
		return nil, nil, err
	}
	figs[results.FigJoinUpdates] = float64(ops["UpdateLoadBalancer"] - before["UpdateLoadBalancer"])
	figs[results.FigJoinCalls] = float64(sum(ops) - sum(before))
	return figs, ops, nil
}

// join registers the nodes spread over two seconds and returns the time
// from the first registration until every load balancer has all of them.
func (e *Env) join(ctx context.Context, cl *harness.Cluster, joined []string, ids map[string]string, ccm *harness.CCM) (time.Duration, error) {
	want := make([]string, 0, len(ids))
	for _, id := range ids {
		want = append(want, id)
	}
	gap := 2 * time.Second / time.Duration(max(1, len(joined)))
	t0 := time.Now()
	errc := make(chan error, 1)
	go func() {
		for _, n := range joined {
			if err := cl.CreateNodes(ctx, []string{n}, nil); err != nil {
				errc <- err
				return
			}
			time.Sleep(gap)
		}
		errc <- nil
	}()
	var createErr error
	check := func() error {
		select {
		case err := <-errc:
			createErr = err
			errc <- err
		default:
		}
		if createErr != nil {
			return createErr
		}
		return alive(ccm)()
	}
	gate, err := updateGate(ctx, cl, e.S.Services)
	if err != nil {
		return 0, err
	}
	gated := func() error {
		if err := check(); err != nil {
			return err
		}
		if !gate(ctx) {
			return errSkip
		}
		return nil
	}
	at, err := e.waitBackends(ctx, cl, e.S.Services, want, backendPoll, min(e.PhaseTimeout, joinTimeout), gated)
	if err != nil {
		return 0, err
	}
	return at.Sub(t0), nil
}

// updateGate returns a check that says whether listing the load balancers
// is worth a rate-limited request now: once the contestant has made at
// least lbs UpdateLoadBalancer calls since the gate was made and another
// since the last listing, or backendListFloor after the last listing.
func updateGate(ctx context.Context, cl *harness.Cluster, lbs int) (func(context.Context) bool, error) {
	st, err := cl.Cloud.Stats(ctx)
	if err != nil {
		return nil, fmt.Errorf("localcloud stats: %w", err)
	}
	base := st.Count("UpdateLoadBalancer")
	seen := int64(-1)
	var listed time.Time
	return func(ctx context.Context) bool {
		st, err := cl.Cloud.Stats(ctx)
		if err != nil {
			return true // list rather than stall on a failed read
		}
		n := st.Count("UpdateLoadBalancer") - base
		if (n >= int64(lbs) && n != seen) || time.Since(listed) >= backendListFloor {
			seen, listed = n, time.Now()
			return true
		}
		return false
	}, nil
}
