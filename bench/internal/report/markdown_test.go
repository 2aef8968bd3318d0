package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/results"
)

func run(sc, cloud, c string, figs map[string]float64, ops map[string]int64) results.Run {
	return results.Run{Scenario: sc, Cloud: cloud, Contestant: c, Figures: figs, CloudOps: ops}
}

func sampleInput() Input {
	var runs []results.Run
	for _, v := range []float64{40, 50, 45} {
		runs = append(runs, run("nodeinit", results.CloudRealistic, "upstream", map[string]float64{results.FigConverge: v, results.FigCloudCalls: 2000}, map[string]int64{"ListInstances": 2000}))
	}
	for _, v := range []float64{4, 6, 5} {
		runs = append(runs, run("nodeinit", results.CloudRealistic, "stratus", map[string]float64{results.FigConverge: v, results.FigCloudCalls: 400, results.FigCloudThrottle: 8}, map[string]int64{"ListInstances": 400}))
	}
	runs = append(runs, results.Run{Scenario: "nodeinit", Cloud: results.CloudRealistic, Contestant: "stratus", Error: "boom"})
	start := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	return Input{
		Results: results.Results{
			Started: start, Finished: start.Add(30 * time.Minute),
			Machine:  results.Machine{CPUs: 2, MemoryMB: 24000, CPUModel: "Test CPU"},
			Versions: results.Versions{Go: "go1.26", Kubernetes: "v1.36.3", StratusCommit: "abc123"},
			Settings: results.Settings{Scale: "default", Reps: 3, Nodes: 1000, Latency: 20 * time.Millisecond, RateLimit: 50, RateBurst: 10, LeaseSeconds: 15},
			Runs:     runs,
		},
		Contestants: []Contestant{{"upstream", "upstream (defaults)"}, {"stratus", "Stratus (as shipped)"}},
		Baseline:    "upstream", Candidate: "stratus",
		ChartLink: func(f string) string { return "benchmarks/" + f },
	}
}

func TestRenderTablesRatiosAndTargets(t *testing.T) {
	out := Render(sampleInput())
	for _, want := range []string{
		"2 CPUs (Test CPU)",
		"Stratus abc123",
		"### 1. Node initialization",
		"| upstream (defaults) | 45.0 (40.0–50.0) | – | 2000 |",
		"| Stratus (as shipped) | 5.0 (4.0–6.0) | – | 400 |",
		"3 ok, **1 failed**",
		"| ListInstances |",
		"![1. Node initialization, time to converge (s)](benchmarks/nodeinit-realistic-converge.png)",
		"| realistic cloud: node initialization with 429 answers ≤ 1% of requests | 8 of 400 requests answered 429 (2.00%) | **MISSED** |",
		"1 target(s) missed",
		"| ideal cloud: node initialization ≤ 1.0× upstream | not measured in this run | – |",
		"| steady state at 5,000 nodes: ≥ 100× fewer cloud calls per hour | not measured in this run | – |",
		"0.111 (9.0× less)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, "### 2. Load balancers") {
		t.Error("scenarios that did not run must not get a section")
	}
	if strings.Contains(out, "Ideal cloud") {
		t.Error("cloud modes that did not run must not get a table")
	}
}

func TestRenderMarksQuickRuns(t *testing.T) {
	in := sampleInput()
	in.Results.Settings.Quick = true
	if !strings.Contains(Render(in), "not a measurement") {
		t.Fatal("a quick run must say it is not a measurement")
	}
}

func TestCell(t *testing.T) {
	for _, c := range []struct {
		s    results.Summary
		want string
	}{
		{results.Summary{}, "–"},
		{results.Summary{Median: 2, Min: 2, Max: 2, N: 3}, "2.0"},
		{results.Summary{Median: 2, Min: 1, Max: 3.25, N: 3}, "2.0 (1.0–3.2)"},
	} {
		if got := Cell(c.s, 1); got != c.want {
			t.Errorf("Cell(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestWriteCharts(t *testing.T) {
	dir := t.TempDir()
	// A chart an earlier report drew and this one does not, and a file
	// that is not a chart of ours.
	for _, f := range []string{"steady-realistic-peak_rss_mib.png", "notes.png"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := WriteCharts(dir, sampleInput())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("files = %v, want the two node initialization charts", files)
	}
	b, err := os.ReadFile(filepath.Join(dir, files[0]))
	if err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Fatalf("%s is not a PNG (err %v)", files[0], err)
	}
	if _, err := os.Stat(filepath.Join(dir, "steady-realistic-peak_rss_mib.png")); !os.IsNotExist(err) {
		t.Errorf("the stale chart is still there (err %v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.png")); err != nil {
		t.Errorf("a file that is not a chart was touched: %v", err)
	}
}

func TestRenderSteadyShowsIdlePeakBesideWholeRunPeak(t *testing.T) {
	in := sampleInput()
	in.Results.Settings.SteadyWindow = 5 * time.Minute
	in.Results.Runs = append(in.Results.Runs, run("steady", results.CloudRealistic, "upstream",
		map[string]float64{results.FigCloudPerHour: 100, results.FigIdlePeakRSS: 90, results.FigPeakRSS: 103, results.FigRSS: 88}, map[string]int64{"GetInstance": 100}))
	out := Render(in)
	for _, want := range []string{
		"| idle peak RSS (MiB) | peak RSS (whole run, MiB) |",
		"| upstream (defaults) | 100 | – | – | 90 | 103 | 88 | – | – | 1 |",
		"a whole cycle runs from one pass start to a later one",
		"Cloud requests per hour by operation",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestRenderLimitDropAndItsTargets(t *testing.T) {
	in := sampleInput()
	in.Contestants = append(in.Contestants, Contestant{"upstream-tuned", "upstream (tuned)"})
	in.Results.Settings.LowRateLimit, in.Results.Settings.LimitLowFor = 10, 30*time.Second
	for _, r := range []struct {
		c            string
		back, thr, n float64
	}{{"upstream", 30, 400, 1}, {"upstream", 25, 380, 2}, {"upstream-tuned", 12, 90, 1}, {"stratus", 2.5, 40, 1}, {"stratus", 6, 60, 2}} {
		in.Results.Runs = append(in.Results.Runs, results.Run{Scenario: "limitdrop", Cloud: results.CloudRealistic, Contestant: r.c, Rep: int(r.n),
			Figures: map[string]float64{results.FigBackUnder: r.back, results.FigCloudThrottle: r.thr, results.FigLowThrottle: r.thr / 2}})
	}
	out := Render(in)
	for _, want := range []string{
		"### 5. The cloud lowers its limit",
		"| back under (s) | 429 while low | 429 in all |",
		"| Stratus (as shipped) | 4.2 (2.5–6.0) | 25 (20–30) | 50 (40–60) |",
		"| limit dropping to 10 requests/s: Stratus back under the new limit within 5 s | Stratus back under after 6.0 s at worst (median 4.2 s) | **MISSED** |",
		"| limit dropping to 10 requests/s: fewer 429s than every contestant | 429 answers: Stratus 50, upstream 390, upstream-tuned 90 | met |",
		"![5. The cloud lowers its limit, back under (s)](benchmarks/limitdrop-realistic-back_under.png)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	in.Results.Runs = append(in.Results.Runs, results.Run{Scenario: "limitdrop", Cloud: results.CloudRealistic, Contestant: "upstream-tuned", Rep: 2,
		Figures: map[string]float64{results.FigCloudThrottle: 10}})
	if out := Render(in); !strings.Contains(out, "| limit dropping to 10 requests/s: fewer 429s than every contestant | 429 answers: Stratus 50, upstream 390, upstream-tuned 50 | **MISSED** |") {
		t.Errorf("a tie with another contestant is not fewer:\n%s", out)
	}
}

// At 10,000 nodes the report checks the scale targets: the node phase
// against the API client's floor, idle memory at half of upstream's, idle
// CPU, and a constant number of list calls per refresh cycle.
func TestRenderScaleTargets(t *testing.T) {
	in := sampleInput()
	in.Results.Settings = results.Settings{Scale: "xlarge", Reps: 1, Nodes: 10000, IdleServices: 300, Services: 2000, KubeAPIQPS: 200, KubeAPIBurst: 300}
	in.Results.Runs = []results.Run{
		run("nodeinit", results.CloudRealistic, "stratus", map[string]float64{results.FigConverge: 110, results.FigAPIFloor: 98.5, results.FigFloorRatio: 110 / 98.5}, nil),
		run("nodeinit", results.CloudIdeal, "stratus", map[string]float64{results.FigConverge: 130, results.FigAPIFloor: 98.5, results.FigFloorRatio: 130 / 98.5}, nil),
		run("steady", results.CloudRealistic, "upstream", map[string]float64{results.FigIdlePeakRSS: 400, results.FigCPUPerHour: 60, results.FigCloudPerHour: 80000, results.FigCycle: 420}, nil),
		run("steady", results.CloudRealistic, "stratus", map[string]float64{results.FigIdlePeakRSS: 190, results.FigCPUPerHour: 61, results.FigCloudPerHour: 131.6, results.FigCycle: 301}, nil),
	}
	out := Render(in)
	for _, want := range []string{
		"### Targets of issue 26",
		"| realistic cloud: node initialization ≤ 1.2× the API-write floor | Stratus 110.0 s against the 98.5 s floor: 1.12× (worst 1.12×) | met |",
		"| ideal cloud: node initialization ≤ 1.2× the API-write floor | Stratus 130.0 s against the 98.5 s floor: 1.32× (worst 1.32×) | **MISSED** |",
		"| idle: peak RSS ≤ 0.5× upstream | idle peak RSS MiB: upstream 400, stratus 190 (0.475 (2.1× less)) | met |",
		"| idle: CPU s/h ≤ upstream, over whole refresh cycles | CPU s/h: upstream 60, stratus 61 (1.02) | **MISSED** |",
		"| idle: cloud requests O(1) per refresh period (one list per period, paged at 1,000) | Stratus 11.0 requests per 301-s cycle (limit 11: ⌈10000 instances / 1000⌉ + ⌈300 load balancers / 1000⌉); upstream 8e+04 per hour | met |",
		"| ideal cloud: LB publish ≤ 1.0× upstream | not measured in this run | – |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, "issue 15") {
		t.Error("the 10,000-node report checks the default scale's targets")
	}
}

// At the far scale the report names the ideal cloud's latency and checks
// the fast-cloud targets only: time ≤ 1.0× upstream in every scenario and
// cloud, API writes per Service ≤ upstream's.
func TestRenderFarScaleTargets(t *testing.T) {
	in := sampleInput()
	in.Results.Settings = results.Settings{Scale: "far", Reps: 3, Nodes: 1200, Services: 300, LBNodes: 20, JoinNodes: 40,
		Latency: 80 * time.Millisecond, IdealLatency: 80 * time.Millisecond, RateLimit: 50, RateBurst: 10, LeaseSeconds: 15}
	lbFigs := func(publish, join, writes float64) map[string]float64 {
		return map[string]float64{results.FigConverge: publish, results.FigJoin: join, results.FigAPIWritesPerService: writes, results.FigAPIWrites: writes * 300}
	}
	in.Results.Runs = []results.Run{
		run("lb", results.CloudIdeal, "upstream", lbFigs(6.15, 4.06, 5), nil),
		run("lb", results.CloudIdeal, "stratus", lbFigs(6.0, 4.54, 4), nil),
		run("failover", results.CloudRealistic, "upstream", map[string]float64{results.FigFailover: 20, results.FigFirstAction: 0.17}, nil),
		run("failover", results.CloudRealistic, "stratus", map[string]float64{results.FigFailover: 16, results.FigFirstAction: 0.15}, nil),
	}
	out := Render(in)
	for _, want := range []string{
		"#### Ideal cloud (80ms latency, no rate limit)",
		"ideal = `--latency=80ms`, no limit, no pacing.",
		"### Targets of issue 35",
		"| ideal cloud: LB publish and node join ≤ 1.0× upstream | publish seconds: upstream 6.15, stratus 6 (0.976 (1.0× less)); join seconds: upstream 4.06, stratus 4.54 (1.12) | **MISSED** |",
		"| ideal cloud: API writes per Service ≤ upstream's | writes per Service: upstream 5, stratus 4 (0.8 (1.2× less)) | met |",
		"| failover and its first action ≤ 1.0× upstream | failover seconds: upstream 20, stratus 16 (0.8 (1.2× less)); first action seconds: upstream 0.17, stratus 0.15 (0.882 (1.1× less)) | met |",
		"| realistic cloud: LB publish and node join ≤ 1.0× upstream | not measured in this run | – |",
		"| API writes |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, "issue 15") || strings.Contains(out, "issue 26") {
		t.Error("the far report checks the fast-cloud targets only")
	}
}
