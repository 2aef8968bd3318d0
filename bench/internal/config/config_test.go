package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil), "/repo")
	if err != nil {
		t.Fatal(err)
	}
	if c.S.Nodes != 1000 || c.S.Services != 300 || c.S.Reps != 3 || c.S.SteadyReps != 1 || c.S.SteadyWindow != 15*time.Minute ||
		c.S.IdleNodes != 5000 || c.S.LimitDropReps != 2 || c.S.LowRateLimit != 10 {
		t.Fatalf("defaults = %+v", c.S)
	}
	if c.DocPath != "/repo/docs/benchmarks.md" || c.ResultsPath != "/repo/bench/results/default.json" || len(c.S.Scenarios) != 6 {
		t.Fatalf("paths/scenarios = %s %s %v", c.DocPath, c.ResultsPath, c.S.Scenarios)
	}
}

func TestQuickWritesElsewhere(t *testing.T) {
	c, err := Load(env(map[string]string{"BENCH_QUICK": "1", "BENCH_SCALE": "large"}), "/repo")
	if err != nil {
		t.Fatal(err)
	}
	if !c.S.Quick || c.S.Reps != 1 || c.S.Nodes >= 1000 || strings.HasPrefix(c.DocPath, "/repo/docs") {
		t.Fatalf("quick = %+v, doc %s", c.S, c.DocPath)
	}
}

func TestSelectionsAndOverrides(t *testing.T) {
	c, err := Load(env(map[string]string{"BENCH_SCENARIOS": "failover, nodeinit", "BENCH_REPS": "5", "BENCH_STEADY_WINDOW": "10m", "BENCH_SCALE": "large"}), "/r")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.S.Scenarios, ",") != "nodeinit,failover" || c.S.Reps != 5 || c.S.SteadyWindow != 10*time.Minute || c.S.Nodes != 5000 {
		t.Fatalf("settings = %+v", c.S)
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	_, err := Load(env(map[string]string{"BENCH_SCENARIOS": "nodeinit,bogus", "BENCH_REPS": "0", "BENCH_SCALE": "huge"}), "/r")
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"BENCH_SCENARIOS", "bogus", "BENCH_REPS", "BENCH_SCALE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// At the large scale steady itself idles at 5,000 nodes: steady5k would
// repeat it.
func TestLargeScaleLeavesOutSteady5k(t *testing.T) {
	c, err := Load(env(map[string]string{"BENCH_SCALE": "large"}), "/r")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.S.Scenarios, ",") != "nodeinit,lb,steady,limitdrop,failover" || c.S.Nodes != 5000 {
		t.Fatalf("large scale: %v at %d nodes", c.S.Scenarios, c.S.Nodes)
	}
	d, err := Load(env(nil), "/r")
	if err != nil {
		t.Fatal(err)
	}
	if d.S.Scenarios[3] != "steady5k" {
		t.Fatalf("the default scale lost steady5k: %v", d.S.Scenarios)
	}
}

// Another cloud or other sizes: the settings take the values, and the
// figures go beside the published ones.
func TestCloudKnobsWriteElsewhere(t *testing.T) {
	c, err := Load(env(map[string]string{"BENCH_RATE_LIMIT": "20", "BENCH_RATE_BURST": "5", "BENCH_LATENCY": "50ms",
		"BENCH_LOW_RATE_LIMIT": "4", "BENCH_PROVIDER_QPS": "0", "BENCH_JOIN_NODES": "40", "BENCH_FAILOVER_NODES": "5000"}), "/repo")
	if err != nil {
		t.Fatal(err)
	}
	if c.S.RateLimit != 20 || c.S.RateBurst != 5 || c.S.Latency != 50*time.Millisecond || c.S.LowRateLimit != 4 ||
		c.S.ProviderQPS != 0 || c.S.JoinNodes != 40 || c.S.FailoverNodes != 5000 {
		t.Fatalf("settings = %+v", c.S)
	}
	if c.DocPath != "/repo/bench/results/custom/benchmarks.md" || c.ResultsPath != "/repo/bench/results/custom-default.json" {
		t.Fatalf("a custom run writes %s and %s, want them under bench/results/custom", c.DocPath, c.ResultsPath)
	}
	for _, bad := range []map[string]string{
		{"BENCH_RATE_LIMIT": "0"}, {"BENCH_RATE_LIMIT": "NaN"}, {"BENCH_LATENCY": "-1s"},
		{"BENCH_LOW_RATE_LIMIT": "60"}, {"BENCH_RATE_BURST": "0"}, {"BENCH_FAILOVER_NODES": "0"},
	} {
		if _, err := Load(env(bad), "/r"); err == nil {
			t.Errorf("%v accepted", bad)
		} else {
			for k := range bad {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		}
	}
}

// Sizes a cluster's cloud cannot hold are refused before anything starts,
// naming the setting and the bound.
func TestSizesBeyondTheCloudAreRefusedUpFront(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"BENCH_SERVICES": "4095"}, []string{"BENCH_SERVICES", "4095", "at most 4094"}},
		{map[string]string{"BENCH_NODES": "20001"}, []string{"BENCH_NODES", "20001", "at most 20000"}},
		{map[string]string{"BENCH_IDLE_NODES": "30000"}, []string{"BENCH_IDLE_NODES", "30000"}},
		{map[string]string{"BENCH_LB_NODES": "19990", "BENCH_JOIN_NODES": "20"}, []string{"BENCH_LB_NODES + BENCH_JOIN_NODES", "20010"}},
		{map[string]string{"BENCH_FAILOVER_NODES": "20001"}, []string{"BENCH_FAILOVER_NODES", "20001", "at most 20000"}},
	} {
		_, err := Load(env(tc.env), "/r")
		if err == nil {
			t.Errorf("%v: want an error", tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", tc.env, err, w)
			}
		}
	}
	// The largest sizes that fit are taken.
	c, err := Load(env(map[string]string{"BENCH_SERVICES": "4094", "BENCH_NODES": "20000", "BENCH_IDLE_NODES": "10000"}), "/r")
	if err != nil || c.S.Services != 4094 || c.S.Nodes != 20000 || c.S.IdleNodes != 10000 {
		t.Fatalf("settings at the bounds: %+v, %v", c.S, err)
	}
}

// The 10,000-node scale: the sizes of issue's scale targets, one cluster
// at a time, its own results file, doc section and charts.
func TestXLargeScale(t *testing.T) {
	c, err := Load(env(map[string]string{"BENCH_SCALE": "xlarge"}), "/r")
	if err != nil {
		t.Fatal(err)
	}
	s := c.S
	if s.Nodes != 10000 || s.IdleNodes != 10000 || s.Services != 2000 || s.LBNodes != 300 || s.JoinNodes != 100 ||
		s.IdleServices != 300 || s.SteadyServices() != 300 || s.Reps != 1 {
		t.Fatalf("sizes = %+v", s)
	}
	// The other scales idle with the load-balancer scenario's Services, and
	// BENCH_IDLE_SERVICES is a size of the run's own.
	if d, err := Load(env(nil), "/r"); err != nil || d.S.SteadyServices() != d.S.Services {
		t.Fatalf("default: idle Services %d, Services %d, %v", d.S.SteadyServices(), d.S.Services, err)
	}
	if o, err := Load(env(map[string]string{"BENCH_SCALE": "xlarge", "BENCH_IDLE_SERVICES": "50"}), "/r"); err != nil || o.S.SteadyServices() != 50 || o.Published {
		t.Fatalf("BENCH_IDLE_SERVICES=50: %d, published %v, %v", o.S.SteadyServices(), o.Published, err)
	}
	if _, err := Load(env(map[string]string{"BENCH_IDLE_SERVICES": "5000"}), "/r"); err == nil || !strings.Contains(err.Error(), "BENCH_IDLE_SERVICES") {
		t.Fatalf("BENCH_IDLE_SERVICES=5000: %v", err)
	}
	if strings.Join(s.Scenarios, ",") != "nodeinit,lb,steady" || strings.Join(s.Contestants, ",") != "upstream,stratus" || c.SteadyParallel {
		t.Fatalf("scenarios %v, contestants %v, side by side %v", s.Scenarios, s.Contestants, c.SteadyParallel)
	}
	if c.ResultsPath != "/r/bench/results/xlarge.json" || c.DocPath != "/r/docs/benchmarks.md" || c.Section != "xlarge" ||
		c.ChartsDir != "/r/docs/benchmarks/xlarge" || c.ChartLink != "benchmarks/xlarge" {
		t.Fatalf("outputs = %s %s %q %s %s", c.ResultsPath, c.DocPath, c.Section, c.ChartsDir, c.ChartLink)
	}
	// The default scale keeps the doc's first section.
	d, err := Load(env(nil), "/r")
	if err != nil || d.Section != "" || d.ChartsDir != "/r/docs/benchmarks" {
		t.Fatalf("default: section %q, charts %s, %v", d.Section, d.ChartsDir, err)
	}
}

// The second setting of the fast-cloud figures: a cloud further away in
// both modes, another node count, twice the joins, the scenarios those
// figures come from, a doc section and results file of its own.
func TestFarScale(t *testing.T) {
	c, err := Load(env(map[string]string{"BENCH_SCALE": "far"}), "/r")
	if err != nil {
		t.Fatal(err)
	}
	s := c.S
	if s.Nodes != 1200 || s.Services != 300 || s.LBNodes != 20 || s.JoinNodes != 40 ||
		s.Latency != 80*time.Millisecond || s.IdealLatency != 80*time.Millisecond || s.Reps != 3 {
		t.Fatalf("settings = %+v", s)
	}
	if strings.Join(s.Scenarios, ",") != "nodeinit,lb,failover" || len(s.Contestants) != 4 || !c.Published {
		t.Fatalf("scenarios %v, contestants %v, published %v", s.Scenarios, s.Contestants, c.Published)
	}
	if c.ResultsPath != "/r/bench/results/far.json" || c.Section != "far" || c.ChartLink != "benchmarks/far" {
		t.Fatalf("outputs = %s %q %s", c.ResultsPath, c.Section, c.ChartLink)
	}
	// The default scale's ideal cloud has no latency.
	if d, err := Load(env(nil), "/r"); err != nil || d.S.IdealLatency != 0 {
		t.Fatalf("default: ideal latency %v, %v", d.S.IdealLatency, err)
	}
	if _, err := Load(env(map[string]string{"BENCH_SCALE": "near"}), "/r"); err == nil || !strings.Contains(err.Error(), `BENCH_SCALE="near"`) {
		t.Fatalf("BENCH_SCALE=near: %v", err)
	}
}
