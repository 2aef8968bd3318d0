// Package config reads the benchmark's settings from BENCH_* environment
// variables, with defaults planned to fit `make bench` in 50 minutes on a
// 2-core machine at the default scale.
package config

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// Config is one invocation's settings.
type Config struct {
	S              results.Settings
	PhaseTimeout   time.Duration
	SteadyParallel bool
	KeepDirs       bool
	// Output paths, absolute.
	DocPath, ResultsPath, ChartsDir string
	// ChartLink is the charts' directory relative to the doc.
	ChartLink string
	// Published is true when the run writes the published figures
	// (docs/benchmarks.md), false for a smoke or custom run.
	Published bool
	// Section names the doc's generated section: "" for the default
	// scale, the scale's name for the others, so that each scale keeps
	// its own figures.
	Section string
}

// The largest sizes a run can have, refused up front beyond: every cluster
// gives localcloud room for MaxInstances instances and MaxLoadBalancers
// load balancers, and claims a /20 VIP pool whose usable addresses (its
// first and last are not handed out) bound the Services of one cluster.
const (
	MaxInstances     = 20000
	MaxLoadBalancers = 5000
	VIPPoolBits      = 20
	MaxServices      = 1<<(32-VIPPoolBits) - 2
)

// Scenario names (kept here to avoid importing the runner).
var scenarios = []string{"nodeinit", "lb", "steady", "steady5k", "limitdrop", "failover"}

// Contestant names.
var contestants = []string{"upstream", "upstream-tuned", "stratus-std", "stratus"}

// Load reads the settings through getenv; root is the repository root.
func Load(getenv func(string) string, root string) (Config, error) {
	c := Config{SteadyParallel: true, PhaseTimeout: 15 * time.Minute}
	// The steady window closes once every operation the contestant sends
	// to the cloud has gone through a whole refresh cycle (both
	// contestants pause 5 minutes after each pass, so a cycle is 5 minutes
	// plus the pass), and after SteadyWindow at the latest: 15 minutes
	// holds a cycle of upstream's at 5,000 nodes (a pass of about 2
	// minutes) whatever the window's phase. The 5,000-node clusters of
	// steady5k idle side by side with the 1,000-node ones, so that the
	// default run stays within its 50 minutes.
	s := results.Settings{
		Scale: "default", Nodes: 1000, Services: 300, LBNodes: 20, JoinNodes: 20, FailoverSvcs: 30,
		Reps: 3, SteadyReps: 1, SteadyWindow: 15 * time.Minute, IdleNodes: 5000,
		KubeAPIQPS: 200, KubeAPIBurst: 300,
		Latency: 20 * time.Millisecond, RateLimit: 50, RateBurst: 10, LeaseSeconds: 15,
		ProviderQPS: 50, ProviderBurst: 5,
		LimitDropReps: 2, LowRateLimit: 10, LimitDropAfter: 5 * time.Second, LimitLowFor: 30 * time.Second,
		Scenarios: scenarios, Contestants: contestants,
	}
	var errs []string
	bad := func(name, val, why string) { errs = append(errs, fmt.Sprintf("%s=%q: %s", name, val, why)) }
	switch v := getenv("BENCH_SCALE"); v {
	case "", "default":
	case "large":
		// steady itself idles at 5,000 nodes then.
		s.Scale, s.Nodes = "large", 5000
		s.Scenarios = slices.DeleteFunc(slices.Clone(s.Scenarios), func(sc string) bool { return sc == "steady5k" })
	case "xlarge":
		// 10,000 nodes: node initialization, 2,000 Services on a few
		// hundred nodes then 100 joins, and the idle cluster, against
		// upstream at its defaults. One 10,000-node cluster at a time:
		// two (with their kube-apiserver, etcd and kwok) and the
		// contestants' caches do not fit this machine's memory side by
		// side with room to spare, and the steady figures are CPU and
		// memory, which a neighbour would disturb.
		s.Scale, s.Nodes, s.IdleNodes = "xlarge", 10000, 10000
		// The idle cluster keeps the 300 Services of the other scales
		// (IdleServices; elsewhere the steady scenarios use Services),
		// each load balancer holding every node: 2,000
		// load balancers of 10,000 backends would be 20 million backends
		// in the cloud, more than any cloud lets one load balancer hold.
		// One repetition: a run at this size takes minutes, the whole
		// invocation about two hours.
		s.Services, s.LBNodes, s.JoinNodes, s.IdleServices = 2000, 300, 100, 300
		s.Reps = 1
		s.Scenarios = []string{"nodeinit", "lb", "steady"}
		s.Contestants = []string{"upstream", "stratus"}
		c.SteadyParallel = false
		c.PhaseTimeout = 30 * time.Minute
	case "far":
		// A second setting for the figures a fast cloud is judged by
		// (publish, join, failover, node initialization): a cloud four
		// times further away (80 ms, in both modes: the ideal cloud lifts
		// the limits, not the distance), 1,200 nodes, and twice the joins.
		// The steady and limit-drop scenarios measure idling and a
		// throttling cloud, which the default scale covers.
		s.Scale, s.Nodes, s.JoinNodes = "far", 1200, 40
		s.Latency, s.IdealLatency = 80*time.Millisecond, 80*time.Millisecond
		s.Scenarios = []string{"nodeinit", "lb", "failover"}
	default:
		bad("BENCH_SCALE", v, "want default, large, xlarge or far")
	}
	if v := getenv("BENCH_QUICK"); v != "" && v != "0" {
		s.Quick, s.Scale = true, "quick"
		s.Nodes, s.Services, s.LBNodes, s.JoinNodes, s.FailoverSvcs, s.IdleNodes = 50, 20, 5, 5, 12, 100
		if s.IdleServices > 0 {
			s.IdleServices = s.Services
		}
		s.Reps, s.LimitDropReps, s.SteadyWindow = 1, 1, 30*time.Second
		s.LimitDropAfter, s.LimitLowFor = time.Second, 5*time.Second
		c.PhaseTimeout = 5 * time.Minute
	}
	if v := getenv("BENCH_SCENARIOS"); v != "" {
		list, err := subset(v, scenarios)
		if err != nil {
			bad("BENCH_SCENARIOS", v, err.Error())
		}
		s.Scenarios = list
	}
	if v := getenv("BENCH_CONTESTANTS"); v != "" {
		list, err := subset(v, contestants)
		if err != nil {
			bad("BENCH_CONTESTANTS", v, err.Error())
		}
		s.Contestants = list
	}
	// custom: a size or cloud setting of the run's own, whose figures must
	// not overwrite the published ones (repetitions change no figure's
	// meaning).
	custom := false
	for _, p := range []struct {
		name   string
		dst    *int
		custom bool
	}{{"BENCH_REPS", &s.Reps, false}, {"BENCH_STEADY_REPS", &s.SteadyReps, false}, {"BENCH_LIMITDROP_REPS", &s.LimitDropReps, false},
		{"BENCH_NODES", &s.Nodes, true}, {"BENCH_SERVICES", &s.Services, true}, {"BENCH_IDLE_NODES", &s.IdleNodes, true},
		{"BENCH_IDLE_SERVICES", &s.IdleServices, true},
		{"BENCH_LB_NODES", &s.LBNodes, true}, {"BENCH_JOIN_NODES", &s.JoinNodes, true}, {"BENCH_RATE_BURST", &s.RateBurst, true},
		{"BENCH_FAILOVER_NODES", &s.FailoverNodes, true}} {
		if v := getenv(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				bad(p.name, v, "want a positive integer")
				continue
			}
			*p.dst = n
			custom = custom || p.custom
		}
	}
	for _, p := range []struct {
		name string
		dst  *float64
		zero bool // 0 is allowed (and means none)
	}{{"BENCH_RATE_LIMIT", &s.RateLimit, false}, {"BENCH_LOW_RATE_LIMIT", &s.LowRateLimit, false}, {"BENCH_PROVIDER_QPS", &s.ProviderQPS, true}} {
		if v := getenv(p.name); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || (f == 0 && !p.zero) {
				bad(p.name, v, "want a positive number of requests per second")
				continue
			}
			*p.dst, custom = f, true
		}
	}
	if v := getenv("BENCH_LATENCY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			bad("BENCH_LATENCY", v, "want a duration such as 20ms")
		} else {
			s.Latency, custom = d, true
		}
	}
	for _, p := range []struct {
		name string
		n    int
	}{{"BENCH_NODES", s.Nodes}, {"BENCH_IDLE_NODES", s.IdleNodes}, {"BENCH_LB_NODES + BENCH_JOIN_NODES", s.LBNodes + s.JoinNodes},
		{"BENCH_FAILOVER_NODES", s.FailoverNodes}} {
		if p.n > MaxInstances {
			bad(p.name, strconv.Itoa(p.n), fmt.Sprintf("at most %d: each cluster's cloud holds that many instances", MaxInstances))
		}
	}
	for _, p := range []struct {
		name string
		n    int
	}{{"BENCH_SERVICES", s.Services}, {"BENCH_IDLE_SERVICES", s.IdleServices}, {"failover Services", s.FailoverSvcs}} {
		if p.n > min(MaxServices, MaxLoadBalancers) {
			bad(p.name, strconv.Itoa(p.n), fmt.Sprintf("at most %d: a cluster's /%d VIP pool has that many addresses", min(MaxServices, MaxLoadBalancers), VIPPoolBits))
		}
	}
	if s.LowRateLimit >= s.RateLimit {
		bad("BENCH_LOW_RATE_LIMIT", fmt.Sprint(s.LowRateLimit), fmt.Sprintf("want less than the cloud's limit, %g", s.RateLimit))
	}
	if v := getenv("BENCH_STEADY_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			bad("BENCH_STEADY_WINDOW", v, "want a positive duration such as 15m")
		} else {
			s.SteadyWindow = d
		}
	}
	if v := getenv("BENCH_STEADY_PARALLEL"); v != "" {
		c.SteadyParallel = v != "0" && v != "false"
	}
	c.KeepDirs = getenv("BENCH_KEEP") != "" && getenv("BENCH_KEEP") != "0"
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("benchmark settings: %s", strings.Join(errs, "; "))
	}
	c.S = s
	c.DocPath = filepath.Join(root, "docs", "benchmarks.md")
	c.ChartsDir = filepath.Join(root, "docs", "benchmarks")
	c.ChartLink = "benchmarks"
	c.ResultsPath = filepath.Join(root, "bench", "results", s.Scale+".json")
	c.Published = !s.Quick && !custom
	if s.Scale != "default" {
		// A scale of its own: a section of the doc and a charts directory
		// of its own, beside the default scale's.
		c.Section = s.Scale
		c.ChartsDir = filepath.Join(c.ChartsDir, s.Scale)
		c.ChartLink = "benchmarks/" + s.Scale
	}
	switch {
	case s.Quick:
		// A smoke run must not overwrite the published figures.
		out := filepath.Join(root, "bench", "results", "quick")
		c.DocPath, c.ChartsDir, c.ChartLink, c.Section = filepath.Join(out, "benchmarks.md"), filepath.Join(out, "charts"), "charts", ""
		c.ResultsPath = filepath.Join(root, "bench", "results", "quick.json")
	case custom:
		// Nor a run at other sizes or against another cloud: its figures go
		// beside the published ones, with their settings.
		out := filepath.Join(root, "bench", "results", "custom")
		c.DocPath, c.ChartsDir, c.ChartLink, c.Section = filepath.Join(out, "benchmarks.md"), filepath.Join(out, "charts"), "charts", ""
		c.ResultsPath = filepath.Join(root, "bench", "results", "custom-"+s.Scale+".json")
	}
	return c, nil
}

func subset(v string, known []string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !slices.Contains(known, item) {
			return nil, fmt.Errorf("unknown %q (known: %s)", item, strings.Join(known, ","))
		}
		if !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	// Keep the canonical order whatever order was given.
	slices.SortFunc(out, func(a, b string) int { return slices.Index(known, a) - slices.Index(known, b) })
	return out, nil
}
