package report

import (
	"fmt"
	"strings"

	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// Target is one figure the issue asks Stratus to reach against upstream.
type Target struct {
	Scenario string
	Text     string
	// Check returns whether the target is met and what was measured.
	Check func(cand, base map[string]results.Summary, s results.Settings) (met bool, measured string)
}

func factor(fig string, min float64) func(cand, base map[string]results.Summary, _ results.Settings) (bool, string) {
	return func(cand, base map[string]results.Summary, _ results.Settings) (bool, string) {
		c, u := cand[fig].Median, base[fig].Median
		if c == 0 {
			return u > 0, fmt.Sprintf("upstream %.4g, Stratus %.4g", u, c)
		}
		f := u / c
		return f >= min, fmt.Sprintf("%.1f× (upstream %.4g, Stratus %.4g)", f, u, c)
	}
}

func both(a, b func(cand, base map[string]results.Summary, s results.Settings) (bool, string)) func(cand, base map[string]results.Summary, s results.Settings) (bool, string) {
	return func(cand, base map[string]results.Summary, s results.Settings) (bool, string) {
		okA, mA := a(cand, base, s)
		okB, mB := b(cand, base, s)
		return okA && okB, mA + "; " + mB
	}
}

func noMore(fig, what string) func(cand, base map[string]results.Summary, _ results.Settings) (bool, string) {
	return func(cand, base map[string]results.Summary, _ results.Settings) (bool, string) {
		c, u := cand[fig].Median, base[fig].Median
		return c <= u, fmt.Sprintf("%s: upstream %.4g, Stratus %.4g", what, u, c)
	}
}

// Targets are the figures of issue 8, Stratus as shipped against upstream
// at its defaults in the same run, with the realistic cloud.
var Targets = []Target{
	{"nodeinit", "node initialization ≥ 5× faster", factor(results.FigConverge, 5)},
	{"nodeinit", "node initialization with ≥ 10× fewer cloud calls", factor(results.FigCloudCalls, 10)},
	{"lb", "load-balancer convergence after node joins ≥ 10× faster", factor(results.FigJoin, 10)},
	{"lb", "no more UpdateLoadBalancer calls after the join", noMore(results.FigJoinUpdates, "UpdateLoadBalancer")},
	{"steady", "steady state ≥ 10× fewer cloud calls per hour", factor(results.FigCloudPerHour, 10)},
	{"steady", "steady state no more RSS", noMore(results.FigPeakRSS, "peak RSS MiB")},
	{"failover", "failover within the lease duration + 2 s, 0 duplicate load balancers", func(cand, _ map[string]results.Summary, s results.Settings) (bool, string) {
		f, d := cand[results.FigFailover], cand[results.FigDuplicates]
		limit := s.LeaseSeconds + 2
		return f.N > 0 && f.Max <= limit && d.Max == 0,
			fmt.Sprintf("Stratus worst failover %.1f s (limit %.0f s), most duplicates %.0f", f.Max, limit, d.Max)
	}},
}

func writeTargets(b *strings.Builder, in Input, g map[results.Key]map[string]results.Summary) {
	b.WriteString("### Targets of issue 8 (Stratus as shipped vs upstream at defaults, realistic cloud)\n\n| target | measured | status |\n|---|---|---|\n")
	missed := 0
	for _, t := range Targets {
		cand := g[results.Key{Scenario: t.Scenario, Cloud: results.CloudRealistic, Contestant: in.Candidate}]
		base := g[results.Key{Scenario: t.Scenario, Cloud: results.CloudRealistic, Contestant: in.Baseline}]
		if cand == nil || (base == nil && t.Scenario != "failover") {
			fmt.Fprintf(b, "| %s | not measured in this run | – |\n", t.Text)
			continue
		}
		ok, measured := t.Check(cand, base, in.Results.Settings)
		status := "met"
		if !ok {
			status = "**MISSED**"
			missed++
		}
		measured = strings.ReplaceAll(measured, "NaN", "n/a")
		fmt.Fprintf(b, "| %s | %s | %s |\n", t.Text, measured, status)
	}
	if missed > 0 {
		fmt.Fprintf(b, "\n%d target(s) missed in this run: the reasons belong in \"Why a target is missed\" below, outside the generated section.\n", missed)
	}
	b.WriteString("\n")
}
