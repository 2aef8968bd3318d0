package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// rolloutResult is one rolling update of one mode's Deployment.
type rolloutResult struct {
	mode mode
	// start is when the Deployment was patched.
	start time.Time
	// rollout is from the patch to every replica updated and available;
	// churn, to the last old pod gone (its preStop sleep over): the time
	// the Service's endpoints were changing.
	rollout, churn time.Duration
	// calls is the load-balancer writes by operation; allCalls, every
	// counted cloud call (reads, instances, routes too).
	calls    map[string]int64
	allCalls int64
	load     loadSummary
	// newPods is the pods the rolling update made; unanswered, those of
	// them no request through the VIP reached.
	newPods, unanswered int
	// fromSeen and fromTransition are, per new pod answered, from its
	// Ready (as the watch saw it, and as its lastTransitionTime says) to
	// the first request through the VIP it answered.
	fromSeen, fromTransition []time.Duration
}

func (r rolloutResult) lbWrites() int64 {
	var n int64
	for _, v := range r.calls {
		n += v
	}
	return n
}

// summary is a line for the log, with when each failure happened.
func (r rolloutResult) summary() string {
	s := fmt.Sprintf("%d requests, %d failed %v, %d slow, %d bare; %d load-balancer writes %v, %d cloud calls in all; rolled out in %v, churn %v; %d new pods, %d unanswered; ready→first answer p50 %v max %v",
		r.load.sent, r.load.failed, r.load.failures, r.load.slow, r.load.bare, r.lbWrites(), r.calls, r.allCalls,
		r.rollout.Round(time.Millisecond), r.churn.Round(time.Millisecond), r.newPods, r.unanswered,
		percentile(r.fromSeen, 50).Round(time.Millisecond), percentile(r.fromSeen, 100).Round(time.Millisecond))
	if len(r.load.failedAt) > 0 {
		at := make([]string, len(r.load.failedAt))
		for i, f := range r.load.failedAt {
			at[i] = "+" + f.at.Sub(r.start).Round(10*time.Millisecond).String() + " " + f.kind
		}
		s += "; failures at " + strings.Join(at, ", ")
	}
	return s
}

// modeResult is every rolling update of one mode.
type modeResult struct {
	mode mode
	runs []rolloutResult
}

// aggregate is a mode's figures over its rolling updates.
type aggregate struct {
	rollouts, sent, failed, slow   int
	bare                           int
	failures                       map[string]int
	newPods, unanswered            int
	writes, all                    spread
	byOp                           map[string]int64
	rollout, churn                 time.Duration // means
	writesPerChurnSecond           float64
	seenP50, seenMax, ltP50, ltMax time.Duration
}

// spread is a count per rolling update: its mean, least and most.
type spread struct {
	mean     float64
	min, max int64
}

func spreadOf(v []int64) spread {
	if len(v) == 0 {
		return spread{}
	}
	var sum int64
	for _, x := range v {
		sum += x
	}
	return spread{mean: float64(sum) / float64(len(v)), min: slices.Min(v), max: slices.Max(v)}
}

func (s spread) String() string {
	m := strconv.FormatFloat(s.mean, 'f', 1, 64)
	if s.min == s.max {
		return m
	}
	return fmt.Sprintf("%s (%d–%d)", m, s.min, s.max)
}

func (m modeResult) aggregate() aggregate {
	a := aggregate{rollouts: len(m.runs), failures: map[string]int{}, byOp: map[string]int64{}}
	var writes, all []int64
	var seen, lt []time.Duration
	var rollout, churn time.Duration
	for _, r := range m.runs {
		a.sent += r.load.sent
		a.failed += r.load.failed
		a.slow += r.load.slow
		a.bare += r.load.bare
		for k, v := range r.load.failures {
			a.failures[k] += v
		}
		for k, v := range r.calls {
			a.byOp[k] += v
		}
		a.newPods += r.newPods
		a.unanswered += r.unanswered
		writes = append(writes, r.lbWrites())
		all = append(all, r.allCalls)
		rollout += r.rollout
		churn += r.churn
		seen = append(seen, r.fromSeen...)
		lt = append(lt, r.fromTransition...)
	}
	a.writes, a.all = spreadOf(writes), spreadOf(all)
	if n := len(m.runs); n > 0 {
		a.rollout, a.churn = rollout/time.Duration(n), churn/time.Duration(n)
	}
	if churn > 0 {
		var total int64
		for _, w := range writes {
			total += w
		}
		a.writesPerChurnSecond = float64(total) / churn.Seconds()
	}
	a.seenP50, a.seenMax = percentile(seen, 50), percentile(seen, 100)
	a.ltP50, a.ltMax = percentile(lt, 50), percentile(lt, 100)
	return a
}

// percentile is the nearest-rank p-th percentile of v (0 when empty).
func percentile(v []time.Duration, p float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// printTable writes the Markdown table, the modes side by side, after a
// line saying how it was measured.
func printTable(w io.Writer, rs []modeResult, o options, args []string) {
	fmt.Fprintf(w, "`%s`: %d real nodes; per kind of target, a Deployment of %d replicas of the demo (readiness probe every second, "+
		"maxSurge 1, maxUnavailable 0, a preStop sleep of %v) behind its own LoadBalancer Service, rolled %d times, the two "+
		"Deployments taking turns; during each rolling update a client on the machine sends %g requests/s to the rolled one's VIP, "+
		"each a new TCP connection (HTTP GET; dial timeout %v, request timeout %v), from 1 s before the patch to %v after the last old pod is gone.\n\n",
		strings.Join(args, " "), o.nodes, o.replicas, o.drain, o.rollouts, o.rate, dialTimeout, requestTimeout, o.tail)
	aggs := make([]aggregate, len(rs))
	fmt.Fprint(w, "| |")
	for i, r := range rs {
		aggs[i] = r.aggregate()
		fmt.Fprintf(w, " %s |", r.mode)
	}
	fmt.Fprint(w, "\n|---|"+strings.Repeat("---|", len(rs))+"\n")
	row := func(name string, cell func(a aggregate) string) {
		fmt.Fprintf(w, "| %s |", name)
		for _, a := range aggs {
			fmt.Fprintf(w, " %s |", cell(a))
		}
		fmt.Fprintln(w)
	}
	row("rolling updates", func(a aggregate) string { return strconv.Itoa(a.rollouts) })
	row("requests sent", func(a aggregate) string { return strconv.Itoa(a.sent) })
	row("requests failed", func(a aggregate) string { return failedCell(a) })
	row("answers slower than 1 s", func(a aggregate) string { return strconv.Itoa(a.slow) })
	row("answers as the bare greeting (the request line later than 300 ms, see below)", func(a aggregate) string { return strconv.Itoa(a.bare) })
	row("load-balancer writes per rolling update (Create/Update/DeleteLoadBalancer), mean (least–most)", func(a aggregate) string { return a.writes.String() })
	row("… of which UpdateLoadBalancer, all rolling updates", func(a aggregate) string { return strconv.FormatInt(a.byOp["UpdateLoadBalancer"], 10) })
	row("all cloud calls per rolling update (reads, instances, routes too)", func(a aggregate) string { return a.all.String() })
	row("rolling update, patch to every replica updated and available (mean, s)", func(a aggregate) string { return seconds(a.rollout) })
	row("churn, patch to the last old pod gone (mean, s)", func(a aggregate) string { return seconds(a.churn) })
	row("load-balancer writes per second of churn", func(a aggregate) string { return strconv.FormatFloat(a.writesPerChurnSecond, 'f', 2, 64) })
	row("new pods (not reached through the VIP)", func(a aggregate) string { return fmt.Sprintf("%d (%d)", a.newPods, a.unanswered) })
	row("Ready (seen by a watch) → first request through the VIP answered by the pod, p50 / max (s)", func(a aggregate) string {
		return seconds(a.seenP50) + " / " + seconds(a.seenMax)
	})
	row("Ready (its lastTransitionTime, whole seconds) → the same, p50 / max (s)", func(a aggregate) string {
		return seconds(a.ltP50) + " / " + seconds(a.ltMax)
	})
}

// failedCell is the failure count and, when there are any, their causes.
func failedCell(a aggregate) string {
	s := strconv.Itoa(a.failed)
	if a.failed == 0 {
		return s
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(a.failures)) {
		parts = append(parts, fmt.Sprintf("%d %s", a.failures[k], k))
	}
	return s + " (" + strings.Join(parts, ", ") + ")"
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) }
