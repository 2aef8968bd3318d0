// Package config reads the benchmark's settings from BENCH_* environment
// variables, with defaults planned to fit `make bench` in 45 minutes on a
// 2-core machine at the default scale.
package config

import (
	"fmt"
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
}

// Scenario names (kept here to avoid importing the runner).
var scenarios = []string{"nodeinit", "lb", "steady", "failover"}

// Contestant names.
var contestants = []string{"upstream", "upstream-tuned", "stratus-std", "stratus"}

// Load reads the settings through getenv; root is the repository root.
func Load(getenv func(string) string, root string) (Config, error) {
	c := Config{SteadyParallel: true, PhaseTimeout: 15 * time.Minute}
	// The steady window is 5 minutes, the pause both contestants take
	// after each node refresh pass (--node-status-update-frequency, 5m in
	// both). Their period is that pause plus the pass, so a window holds at
	// most one pass and its ×12 misstates a contestant whose pass takes
	// minutes (the report says so); windows holding several periods would
	// push `make bench` past its 45-minute budget on 2 cores.
	s := results.Settings{
		Scale: "default", Nodes: 1000, Services: 300, LBNodes: 20, JoinNodes: 20, FailoverSvcs: 30,
		Reps: 3, SteadyReps: 1, SteadyWindow: 5 * time.Minute,
		KubeAPIQPS: 200, KubeAPIBurst: 300,
		Latency: 20 * time.Millisecond, RateLimit: 50, RateBurst: 10, LeaseSeconds: 15,
		ProviderQPS: 50, ProviderBurst: 5,
		Scenarios: scenarios, Contestants: contestants,
	}
	var errs []string
	bad := func(name, val, why string) { errs = append(errs, fmt.Sprintf("%s=%q: %s", name, val, why)) }
	switch v := getenv("BENCH_SCALE"); v {
	case "", "default":
	case "large":
		s.Scale, s.Nodes = "large", 5000
	default:
		bad("BENCH_SCALE", v, "want default or large")
	}
	if v := getenv("BENCH_QUICK"); v != "" && v != "0" {
		s.Quick, s.Scale = true, "quick"
		s.Nodes, s.Services, s.LBNodes, s.JoinNodes, s.FailoverSvcs = 50, 20, 5, 5, 12
		s.Reps, s.SteadyWindow = 1, 30*time.Second
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
	for _, p := range []struct {
		name string
		dst  *int
	}{{"BENCH_REPS", &s.Reps}, {"BENCH_STEADY_REPS", &s.SteadyReps}, {"BENCH_NODES", &s.Nodes}, {"BENCH_SERVICES", &s.Services}} {
		if v := getenv(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				bad(p.name, v, "want a positive integer")
				continue
			}
			*p.dst = n
		}
	}
	if v := getenv("BENCH_STEADY_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			bad("BENCH_STEADY_WINDOW", v, "want a positive duration such as 10m")
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
	if s.Quick {
		// A smoke run must not overwrite the published figures.
		out := filepath.Join(root, "bench", "results", "quick")
		c.DocPath, c.ChartsDir, c.ChartLink = filepath.Join(out, "benchmarks.md"), filepath.Join(out, "charts"), "charts"
		c.ResultsPath = filepath.Join(root, "bench", "results", "quick.json")
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
