package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// Column is one figure shown in a scenario table.
type Column struct {
	Figure string
	Title  string
	// Lower is true when a smaller value is better (all of ours).
	Digits int
}

// Scenario describes how a scenario is reported.
type Scenario struct {
	Name    string
	Title   string
	Explain func(s results.Settings) string
	Columns []Column
	// Charts are the figures drawn as bar charts.
	Charts []string
}

// Scenarios are the report's sections, in order.
var Scenarios = []Scenario{
	{
		Name: "nodeinit", Title: "1. Node initialization",
		Explain: func(s results.Settings) string {
			return fmt.Sprintf("%d instances exist in localcloud; the controller manager leads; then %d Nodes register at once as kubelets with "+
				"`--cloud-provider=external` do. Time from the first registration until every node has a providerID and no uninitialized taint.", s.Nodes, s.Nodes)
		},
		Columns: []Column{{results.FigConverge, "time to converge (s)", 1}, {results.FigCloudCalls, "cloud requests", 0}, {results.FigCloudThrottle, "of which 429", 0},
			{results.FigAPIRequests, "API server requests", 0}, {results.FigCPU, "CPU (s)", 1}, {results.FigPeakRSS, "peak RSS (MiB)", 0}},
		Charts: []string{results.FigConverge, results.FigCloudCalls},
	},
	{
		Name: "lb", Title: "2. Load balancers",
		Explain: func(s results.Settings) string {
			return fmt.Sprintf("%d LoadBalancer Services (one UDP port each) are created at once on %d initialized nodes; "+
				"then %d nodes join within 2 s. \"published\": time until every Service has an ingress; "+
				"\"join\": time from the first join until every load balancer's backends (read from localcloud) include every joined node. "+
				"The runner polls localcloud every 500 ms during the join; its requests are not counted.", s.Services, s.LBNodes, s.JoinNodes)
		},
		Columns: []Column{{results.FigConverge, "published (s)", 1}, {results.FigJoin, "join (s)", 1}, {results.FigJoinUpdates, "UpdateLoadBalancer after join", 0},
			{results.FigJoinCalls, "cloud requests after join", 0}, {results.FigCloudCalls, "cloud requests (total)", 0}, {results.FigCloudThrottle, "of which 429", 0},
			{results.FigAPIRequests, "API server requests", 0}, {results.FigCPU, "CPU (s)", 1}, {results.FigPeakRSS, "peak RSS (MiB)", 0}},
		Charts: []string{results.FigJoin, results.FigConverge, results.FigJoinUpdates},
	},
	{
		Name: "steady", Title: "3. Steady state",
		Explain: func(s results.Settings) string {
			return fmt.Sprintf("%d initialized nodes and %d published Services (every load balancer holding every node) left idle for %v, "+
				"extrapolated to one hour (× %.3g). The contestants idle side by side, each on its own cluster, unless BENCH_STEADY_PARALLEL=0. "+
				"\"Idle peak RSS\" is the highest resident set sampled every second during the window only; \"peak RSS (whole run)\" is the "+
				"high-water mark since start, setup included; \"RSS at the end\" is the resident set when the window closes. "+
				"The per-hour figures are the window's counts × %.3g, not whole refresh cycles: both contestants wait 5 minutes after a "+
				"node refresh pass ends before the next, so a contestant whose pass itself takes minutes (upstream at 5,000 nodes) "+
				"has a period longer than the window, and a window cut across its pass can count less or more than its real hourly rate.",
				s.Nodes, s.Services, s.SteadyWindow, float64(time.Hour)/float64(max(1, s.SteadyWindow)), float64(time.Hour)/float64(max(1, s.SteadyWindow)))
		},
		Columns: []Column{{results.FigCloudPerHour, "cloud requests / h", 0}, {results.FigAPIPerHour, "API server requests / h", 0},
			{results.FigCPUPerHour, "CPU s / h", 1}, {results.FigIdlePeakRSS, "idle peak RSS (MiB)", 0}, {results.FigPeakRSS, "peak RSS (whole run, MiB)", 0},
			{results.FigRSS, "RSS at the end (MiB)", 0}},
		Charts: []string{results.FigCloudPerHour, results.FigIdlePeakRSS, results.FigPeakRSS},
	},
	{
		Name: "failover", Title: "4. Failover",
		Explain: func(s results.Settings) string {
			return fmt.Sprintf("Two replicas with leader election (lease %gs); %d Services are created one every 100 ms and the leader is SIGKILLed "+
				"after a third of them. Takeover: kill until the standby holds the lease; failover: kill until every Service has an ingress. "+
				"Requests, CPU and RSS are the standby's.", s.LeaseSeconds, s.FailoverSvcs)
		},
		Columns: []Column{{results.FigTakeover, "takeover (s)", 1}, {results.FigFailover, "failover (s)", 1}, {results.FigDuplicates, "duplicate LBs", 0},
			{results.FigCloudCalls, "cloud requests", 0}, {results.FigAPIRequests, "API server requests", 0}, {results.FigCPU, "CPU (s)", 1}, {results.FigPeakRSS, "peak RSS (MiB)", 0}},
		Charts: []string{results.FigFailover},
	},
}

// Contestant is a contestant's id and label, in report order.
type Contestant struct{ Name, Label string }

// Input is everything the report is made from.
type Input struct {
	Results     results.Results
	Contestants []Contestant
	// ChartLink maps a chart file name to the link written in the doc;
	// nil means no charts.
	ChartLink func(file string) string
	// Baseline and Candidate are the contestants the targets compare.
	Baseline, Candidate string
}

// ChartFile names the PNG of one figure of one scenario and cloud mode.
func ChartFile(scenario, cloud, figure string) string {
	return fmt.Sprintf("%s-%s-%s.png", scenario, cloud, strings.TrimSuffix(figure, "_s"))
}

// Render returns the generated section.
func Render(in Input) string {
	var b strings.Builder
	r := in.Results
	groups := results.Group(r.Runs)
	fails := results.Failures(r.Runs)
	fmt.Fprintf(&b, "_Generated by `make bench` on %s (%s of wall time)", r.Finished.UTC().Format("2006-01-02 15:04 MST"), r.Finished.Sub(r.Started).Round(time.Second))
	if r.Settings.Quick {
		b.WriteString(", **BENCH_QUICK smoke run: tiny scale, one repetition; not a measurement**")
	}
	b.WriteString("._\n\n")
	writeSetup(&b, r)
	b.WriteString(reproduce)
	for _, sc := range Scenarios {
		if !ran(r.Runs, sc.Name) {
			continue
		}
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", sc.Title, sc.Explain(r.Settings))
		for _, cloud := range []string{results.CloudRealistic, results.CloudIdeal} {
			if !ranIn(r.Runs, sc.Name, cloud) {
				continue
			}
			fmt.Fprintf(&b, "#### %s\n\n", cloudTitle(cloud, r.Settings))
			writeTable(&b, sc, cloud, in.Contestants, groups, fails)
			writeOps(&b, r.Runs, sc.Name, cloud, in.Contestants)
			if in.ChartLink != nil {
				for _, f := range sc.Charts {
					file := ChartFile(sc.Name, cloud, f)
					fmt.Fprintf(&b, "![%s, %s](%s)\n", sc.Title, columnTitle(sc, f), in.ChartLink(file))
				}
				b.WriteString("\n")
			}
		}
	}
	writeRatios(&b, in, groups)
	writeTargets(&b, in, groups)
	return b.String()
}

// reproduce tells how to run the benchmark; it sits in the generated
// section so that it stays true to the runner that wrote the figures.
const reproduce = "**Reproduce**: `make bench` (builds the tools, `bin/stratus` and the peer `bin/upstream-ccm`, then runs `bin/bench`). " +
	"`BENCH_SCENARIOS=nodeinit,lb,steady,failover` selects scenarios (the others keep their previous figures), " +
	"`BENCH_CONTESTANTS=upstream,upstream-tuned,stratus-std,stratus` selects contestants (the others keep their previous figures too), `BENCH_REPS` (default 3), " +
	"`BENCH_STEADY_WINDOW` (default 5m, the pause both contestants take after each node refresh pass; figures are extrapolated to one hour) and `BENCH_STEADY_REPS` (default 1) set the repetitions, " +
	"`BENCH_SCALE=large` registers 5,000 nodes instead of 1,000, `BENCH_QUICK=1` is a smoke run at tiny scale written under " +
	"`bench/results/quick/` instead of here, and `BENCH_KEEP=1` keeps every run's logs. Raw results: `bench/results/<scale>.json`.\n\n"

func writeSetup(b *strings.Builder, r results.Results) {
	m, v, s := r.Machine, r.Versions, r.Settings
	fmt.Fprintf(b, "**Machine**: %d CPUs (%s), %d MiB memory", m.CPUs, m.CPUModel, m.MemoryMB)
	if m.Kernel != "" {
		fmt.Fprintf(b, ", Linux %s", m.Kernel)
	}
	fmt.Fprintf(b, ".  \n**Versions**: %s, Kubernetes %s (kube-apiserver, etcd, k8s.io/cloud-provider for the peer), Stratus %s.  \n", v.Go, v.Kubernetes, v.StratusCommit)
	fmt.Fprintf(b, "**Settings**: scale %s; %d repetitions (median, min–max shown), steady state %d × %v; every contestant with "+
		"`--kube-api-qps=%d --kube-api-burst=%d --leader-elect=true`; localcloud as a separate `stratus localcloud serve` process, "+
		"realistic = `--latency=%v --rate-limit=%g --rate-burst=%d`",
		s.Scale, s.Reps, s.SteadyReps, s.SteadyWindow, s.KubeAPIQPS, s.KubeAPIBurst, s.Latency, s.RateLimit, s.RateBurst)
	if s.ProviderQPS > 0 {
		fmt.Fprintf(b, " with every contestant's provider pacing its requests client-side (`rateLimitQPS: %g`, `rateLimitBurst: %d` in the shared provider config, as a cloud SDK does)",
			s.ProviderQPS, s.ProviderBurst)
	}
	b.WriteString(", ideal = no latency, no limit, no pacing.")
	if l := loadSummary(r.Runs); l.N > 0 {
		fmt.Fprintf(b, "  \n**Load**: 1-minute load average at the end of each run: median %.1f (%.1f–%.1f) on %d CPUs; "+
			"times measured under load from other work are noisier, counts are not.", l.Median, l.Min, l.Max, m.CPUs)
	}
	b.WriteString("\n\n")
}

// loadSummary summarizes the load averages the runs recorded.
func loadSummary(runs []results.Run) results.Summary {
	var xs []float64
	for _, r := range runs {
		if r.LoadAvg > 0 {
			xs = append(xs, r.LoadAvg)
		}
	}
	return results.Summarize(xs)
}

func cloudTitle(cloud string, s results.Settings) string {
	if cloud == results.CloudRealistic {
		return fmt.Sprintf("Realistic cloud (%v latency, %g requests/s)", s.Latency, s.RateLimit)
	}
	return "Ideal cloud (no latency, no rate limit)"
}

func ran(runs []results.Run, sc string) bool {
	for _, r := range runs {
		if r.Scenario == sc {
			return true
		}
	}
	return false
}

func ranIn(runs []results.Run, sc, cloud string) bool {
	for _, r := range runs {
		if r.Scenario == sc && r.Cloud == cloud {
			return true
		}
	}
	return false
}

func columnTitle(sc Scenario, fig string) string {
	for _, c := range sc.Columns {
		if c.Figure == fig {
			return c.Title
		}
	}
	return fig
}

// Cell formats a summary as "median (min–max)", or just the value when
// all repetitions agree or there was one.
func Cell(s results.Summary, digits int) string {
	if s.N == 0 {
		return "–"
	}
	f := func(v float64) string { return fmt.Sprintf("%.*f", digits, v) }
	if s.N == 1 || f(s.Min) == f(s.Max) {
		return f(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
}

func writeTable(b *strings.Builder, sc Scenario, cloud string, cs []Contestant, g map[results.Key]map[string]results.Summary, fails map[results.Key]int) {
	b.WriteString("| contestant |")
	for _, c := range sc.Columns {
		fmt.Fprintf(b, " %s |", c.Title)
	}
	b.WriteString(" runs |\n|---|")
	for range sc.Columns {
		b.WriteString("---:|")
	}
	b.WriteString("---:|\n")
	for _, c := range cs {
		k := results.Key{Scenario: sc.Name, Cloud: cloud, Contestant: c.Name}
		figs := g[k]
		n := 0
		fmt.Fprintf(b, "| %s |", c.Label)
		for _, col := range sc.Columns {
			s := figs[col.Figure]
			n = max(n, s.N)
			fmt.Fprintf(b, " %s |", Cell(s, col.Digits))
		}
		if f := fails[k]; f > 0 {
			fmt.Fprintf(b, " %d ok, **%d failed** |\n", n, f)
		} else {
			fmt.Fprintf(b, " %d |\n", n)
		}
	}
	b.WriteString("\n")
}

// writeOps lists the median number of cloud requests by operation.
func writeOps(b *strings.Builder, runs []results.Run, sc, cloud string, cs []Contestant) {
	per := map[string]map[string][]float64{}
	opsSeen := map[string]bool{}
	for _, r := range runs {
		if r.Scenario != sc || r.Cloud != cloud || r.Error != "" {
			continue
		}
		if per[r.Contestant] == nil {
			per[r.Contestant] = map[string][]float64{}
		}
		for op := range r.CloudOps {
			opsSeen[op] = true
		}
		for op := range opsSeen {
			per[r.Contestant][op] = append(per[r.Contestant][op], float64(r.CloudOps[op]))
		}
	}
	if len(opsSeen) == 0 {
		return
	}
	ops := make([]string, 0, len(opsSeen))
	for op := range opsSeen {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	b.WriteString("Cloud requests by operation (median):\n\n| contestant |")
	for _, op := range ops {
		fmt.Fprintf(b, " %s |", op)
	}
	b.WriteString("\n|---|")
	for range ops {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, c := range cs {
		if per[c.Name] == nil {
			continue
		}
		fmt.Fprintf(b, "| %s |", c.Label)
		for _, op := range ops {
			fmt.Fprintf(b, " %s |", Cell(results.Summary{Median: results.Summarize(per[c.Name][op]).Median, N: 1}, 0))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// Ratio returns candidate/baseline, NaN when undefined.
func Ratio(candidate, baseline float64) float64 {
	if baseline == 0 {
		if candidate == 0 {
			return 1
		}
		return math.NaN()
	}
	return candidate / baseline
}

func fmtRatio(r float64) string {
	if math.IsNaN(r) {
		return "n/a"
	}
	if r > 0 && r < 1 {
		return fmt.Sprintf("%.3g (%.1f× less)", r, 1/r)
	}
	return fmt.Sprintf("%.3g", r)
}

func writeRatios(b *strings.Builder, in Input, g map[results.Key]map[string]results.Summary) {
	b.WriteString("### Ratios, Stratus / upstream\n\nMedians of Stratus as shipped divided by the medians of upstream at its defaults (below 1: Stratus is faster or cheaper); " +
		"in brackets, Stratus with `--cloud-extensions=false` against tuned upstream.\n\n| scenario | cloud | figure | Stratus / upstream | (std / tuned) |\n|---|---|---|---:|---:|\n")
	for _, sc := range Scenarios {
		for _, cloud := range []string{results.CloudRealistic, results.CloudIdeal} {
			cand := g[results.Key{Scenario: sc.Name, Cloud: cloud, Contestant: in.Candidate}]
			base := g[results.Key{Scenario: sc.Name, Cloud: cloud, Contestant: in.Baseline}]
			if cand == nil || base == nil {
				continue
			}
			std := g[results.Key{Scenario: sc.Name, Cloud: cloud, Contestant: "stratus-std"}]
			tuned := g[results.Key{Scenario: sc.Name, Cloud: cloud, Contestant: "upstream-tuned"}]
			for _, col := range sc.Columns {
				c, okc := cand[col.Figure]
				u, oku := base[col.Figure]
				if !okc || !oku {
					continue
				}
				second := "–"
				if s, ok := std[col.Figure]; ok {
					if t, ok := tuned[col.Figure]; ok {
						second = fmtRatio(Ratio(s.Median, t.Median))
					}
				}
				fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", sc.Title, cloud, col.Title, fmtRatio(Ratio(c.Median, u.Median)), second)
			}
		}
	}
	b.WriteString("\n")
}
