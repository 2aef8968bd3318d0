package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// GrowthSection names the doc's section on how the figures grow with the
// cluster's size, drawn from every scale's results.
const GrowthSection = "growth"

// growthFigure is one figure followed across scales: a scenario's figure
// in the realistic cloud, at the node count the scenario ran with.
type growthFigure struct {
	scenarios []string // the scenarios that measure it, each at its own size
	figure    string
	title     string
	digits    int
}

var growthFigures = []growthFigure{
	{[]string{"nodeinit"}, results.FigConverge, "node initialization (s)", 1},
	{[]string{"steady", "steady5k"}, results.FigIdlePeakRSS, "idle peak RSS (MiB)", 0},
	{[]string{"steady", "steady5k"}, results.FigCPUPerHour, "idle CPU s / h", 1},
	{[]string{"steady", "steady5k"}, results.FigCloudPerHour, "idle cloud requests / h", 0},
}

// nodesOf is the node count a scenario ran with under settings s.
func nodesOf(scenario string, s results.Settings) int {
	if scenario == "steady5k" {
		return s.IdleNodes
	}
	return s.Nodes
}

// Growth is one figure's medians by contestant and node count.
type Growth struct {
	fig    growthFigure
	byNode map[string]map[int]results.Summary // contestant → nodes → summary
}

// Nodes returns the node counts measured, ascending.
func (g Growth) Nodes() []int {
	var out []int
	for _, m := range g.byNode {
		for n := range m {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// CollectGrowth gathers the growth figures from the results of every
// scale, later files winning where two measured the same node count.
func CollectGrowth(all []results.Results) []Growth {
	slices.SortFunc(all, func(a, b results.Results) int { return a.Finished.Compare(b.Finished) })
	out := make([]Growth, 0, len(growthFigures))
	for _, f := range growthFigures {
		g := Growth{fig: f, byNode: map[string]map[int]results.Summary{}}
		for _, r := range all {
			if r.Settings.Quick {
				continue
			}
			groups := results.Group(r.Runs)
			for k, figs := range groups {
				s, ok := figs[f.figure]
				if !ok || k.Cloud != results.CloudRealistic || !slices.Contains(f.scenarios, k.Scenario) {
					continue
				}
				if g.byNode[k.Contestant] == nil {
					g.byNode[k.Contestant] = map[int]results.Summary{}
				}
				g.byNode[k.Contestant][nodesOf(k.Scenario, r.Settings)] = s
			}
		}
		out = append(out, g)
	}
	return out
}

// GrowthChartFile names a growth figure's chart.
func GrowthChartFile(figure string) string {
	return "growth-" + strings.TrimSuffix(figure, "_s") + ".png"
}

// RenderGrowth returns the growth section: per figure, a table of the
// medians by node count and contestant, and its chart's link.
func RenderGrowth(gs []Growth, cs []Contestant, chartLink func(string) string) string {
	var b strings.Builder
	b.WriteString("How each figure grows with the cluster, from every scale's results file " +
		"(`bench/results/<scale>.json`; realistic cloud, medians): node initialization at each scale's node count, " +
		"the idle figures at the steady scenarios' (steady5k's 5,000 nodes in the default run).\n\n")
	for _, g := range gs {
		nodes := g.Nodes()
		if len(nodes) < 2 {
			continue
		}
		fmt.Fprintf(&b, "#### %s\n\n| nodes |", g.fig.title)
		for _, c := range cs {
			fmt.Fprintf(&b, " %s |", c.Name)
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(cs)) + "\n")
		for _, n := range nodes {
			fmt.Fprintf(&b, "| %d |", n)
			for _, c := range cs {
				fmt.Fprintf(&b, " %s |", Cell(g.byNode[c.Name][n], g.fig.digits))
			}
			b.WriteString("\n")
		}
		if chartLink != nil {
			fmt.Fprintf(&b, "\n![%s by node count](%s)\n", g.fig.title, chartLink(GrowthChartFile(g.fig.figure)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// WriteGrowthCharts draws a line per contestant for each growth figure
// measured at two node counts or more, and returns the files written.
func WriteGrowthCharts(dir string, gs []Growth, cs []Contestant) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // charts are documentation, world-readable
		return nil, fmt.Errorf("report: %w", err)
	}
	var files []string
	for _, g := range gs {
		if len(g.Nodes()) < 2 {
			continue
		}
		file := GrowthChartFile(g.fig.figure)
		if err := growthChart(filepath.Join(dir, file), g, cs); err != nil {
			return files, err
		}
		files = append(files, file)
	}
	return files, nil
}

func growthChart(path string, g Growth, cs []Contestant) error {
	p := plot.New()
	p.Title.Text = g.fig.title + " by node count"
	p.X.Label.Text = "nodes"
	p.Y.Label.Text = g.fig.title
	p.Y.Min = 0
	for i, c := range cs {
		var pts plotter.XYs
		for _, n := range g.Nodes() {
			if s, ok := g.byNode[c.Name][n]; ok && s.N > 0 {
				pts = append(pts, plotter.XY{X: float64(n), Y: s.Median})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("report: chart %s: %w", path, err)
		}
		line.Color, points.Color = palette[i%len(palette)], palette[i%len(palette)]
		p.Add(line, points)
		p.Legend.Add(c.Name, line, points)
	}
	p.Legend.Top, p.Legend.Left = true, true
	if err := p.Save(6*vg.Inch, 3.5*vg.Inch, path); err != nil {
		return fmt.Errorf("report: save chart %s: %w", path, err)
	}
	return nil
}
