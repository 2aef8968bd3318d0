package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/results"
)

func steadyRun(scenario, contestant string, rss float64) results.Run {
	return results.Run{Scenario: scenario, Cloud: results.CloudRealistic, Contestant: contestant,
		Figures: map[string]float64{results.FigIdlePeakRSS: rss}}
}

// The default run's steady (1,000 nodes) and steady5k (5,000) and an
// xlarge run's steady (10,000) make three points per contestant; a quick
// run and the ideal cloud are left out.
func TestGrowthAcrossScales(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	def := results.Results{Finished: t0, Settings: results.Settings{Scale: "default", Nodes: 1000, IdleNodes: 5000},
		Runs: []results.Run{steadyRun("steady", "upstream", 105), steadyRun("steady", "stratus", 87),
			steadyRun("steady5k", "upstream", 218), steadyRun("steady5k", "stratus", 143)}}
	xl := results.Results{Finished: t0.Add(time.Hour), Settings: results.Settings{Scale: "xlarge", Nodes: 10000, IdleNodes: 10000},
		Runs: []results.Run{steadyRun("steady", "upstream", 400), steadyRun("steady", "stratus", 200)}}
	quick := results.Results{Finished: t0.Add(2 * time.Hour), Settings: results.Settings{Quick: true, Nodes: 50},
		Runs: []results.Run{steadyRun("steady", "stratus", 1)}}
	gs := CollectGrowth([]results.Results{xl, quick, def})
	cs := []Contestant{{Name: "upstream"}, {Name: "stratus"}}
	var rss Growth
	for _, g := range gs {
		if g.fig.figure == results.FigIdlePeakRSS {
			rss = g
		}
	}
	if got := rss.Nodes(); len(got) != 3 || got[0] != 1000 || got[1] != 5000 || got[2] != 10000 {
		t.Fatalf("node counts %v, want 1000, 5000, 10000", got)
	}
	md := RenderGrowth(gs, cs, func(f string) string { return "benchmarks/" + f })
	for _, want := range []string{"#### idle peak RSS (MiB)", "| 5000 | 218 | 143 |", "| 10000 | 400 | 200 |", "benchmarks/growth-idle_peak_rss_mib.png"} {
		if !strings.Contains(md, want) {
			t.Errorf("growth section lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "#### node initialization") {
		t.Errorf("a figure measured at one node count only got a table:\n%s", md)
	}
	dir := t.TempDir()
	files, err := WriteGrowthCharts(dir, gs, cs)
	if err != nil || len(files) != 1 {
		t.Fatalf("charts %v, %v; want the RSS chart only", files, err)
	}
	if st, err := os.Stat(filepath.Join(dir, files[0])); err != nil || st.Size() == 0 {
		t.Fatalf("chart file: %v", err)
	}
}
