package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// palette colours the contestants in report order: upstream in greys,
// Stratus in blues.
var palette = []color.Color{
	color.RGBA{R: 120, G: 120, B: 120, A: 255},
	color.RGBA{R: 180, G: 180, B: 180, A: 255},
	color.RGBA{R: 120, G: 170, B: 230, A: 255},
	color.RGBA{R: 30, G: 90, B: 180, A: 255},
}

// rangeBars are the min–max whiskers drawn over the median bars.
type rangeBars struct {
	plotter.XYs
	plotter.YErrors
}

// WriteCharts draws one bar chart (median, with min–max whiskers) per
// scenario, cloud mode and charted figure into dir, and returns the file
// names written.
func WriteCharts(dir string, in Input) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // charts are documentation, world-readable
		return nil, fmt.Errorf("report: %w", err)
	}
	g := results.Group(in.Results.Runs)
	var files []string
	for _, sc := range Scenarios {
		for _, cloud := range []string{results.CloudRealistic, results.CloudIdeal} {
			if !ranIn(in.Results.Runs, sc.Name, cloud) {
				continue
			}
			for _, fig := range sc.Charts {
				file := ChartFile(sc.Name, cloud, fig)
				if err := chart(filepath.Join(dir, file), sc, cloud, fig, in.Contestants, g); err != nil {
					return files, err
				}
				files = append(files, file)
			}
		}
	}
	return files, prune(dir, files)
}

// prune removes the charts of dir that this report no longer draws (a
// figure dropped from a scenario's charts), so that the directory holds
// no image the doc does not show. Only files named as ChartFile names
// them are touched.
func prune(dir string, keep []string) error {
	for _, sc := range Scenarios {
		old, err := filepath.Glob(filepath.Join(dir, sc.Name+"-*.png"))
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		for _, f := range old {
			if slices.Contains(keep, filepath.Base(f)) || !isChartOf(filepath.Base(f), sc.Name) {
				continue
			}
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("report: remove a stale chart: %w", err)
			}
		}
	}
	return nil
}

// isChartOf says whether file is named as ChartFile names a chart of
// scenario: "steady-" must not match steady5k's charts.
func isChartOf(file, scenario string) bool {
	for _, cloud := range []string{results.CloudRealistic, results.CloudIdeal} {
		if strings.HasPrefix(file, scenario+"-"+cloud+"-") {
			return true
		}
	}
	return false
}

// valueLabel is a bar's median as printed over it, with the table's
// digits (counts as integers), and one more below 1 so that a small bar
// does not read as 0.
func valueLabel(s results.Summary, digits int) string {
	if s.N == 0 {
		return "n/a"
	}
	if digits > 0 && s.Median < 1 {
		digits++
	}
	return strconv.FormatFloat(s.Median, 'f', digits, 64)
}

// niceCeil rounds v up to 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power
// of ten, so that the axis gets round ticks (an axis ending at 25.3 got
// labels only at 0 and 25).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return v
	}
	step := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*step >= v*(1-1e-9) {
			return m * step
		}
	}
	return 10 * step
}

func columnDigits(sc Scenario, fig string) int {
	for _, c := range sc.Columns {
		if c.Figure == fig {
			return c.Digits
		}
	}
	return 1
}

func chart(path string, sc Scenario, cloud, fig string, cs []Contestant, g map[results.Key]map[string]results.Summary) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s (%s cloud)", sc.Title, columnTitle(sc, fig), cloud)
	p.Y.Label.Text = columnTitle(sc, fig)
	p.Y.Min = 0
	var labels []string
	var values plotter.XYLabels
	top := 0.0
	w := vg.Points(40)
	for i, c := range cs {
		s := g[results.Key{Scenario: sc.Name, Cloud: cloud, Contestant: c.Name}][fig]
		labels = append(labels, c.Name)
		// The median is written over each bar: ratios of 10× and more
		// leave the small bars unreadable against the axis alone.
		top = max(top, s.Max, s.Median)
		values.XYs = append(values.XYs, plotter.XY{X: float64(i), Y: s.Max})
		values.Labels = append(values.Labels, valueLabel(s, columnDigits(sc, fig)))
		bars, err := plotter.NewBarChart(plotter.Values{s.Median}, w)
		if err != nil {
			return fmt.Errorf("report: chart %s: %w", path, err)
		}
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		bars.XMin = float64(i)
		p.Add(bars)
		if s.N > 1 {
			rb := rangeBars{XYs: plotter.XYs{{X: float64(i), Y: s.Median}}, YErrors: plotter.YErrors{{Low: s.Median - s.Min, High: s.Max - s.Median}}}
			eb, err := plotter.NewYErrorBars(rb)
			if err != nil {
				return fmt.Errorf("report: chart %s: %w", path, err)
			}
			p.Add(eb)
		}
	}
	if len(values.XYs) > 0 {
		l, err := plotter.NewLabels(values)
		if err != nil {
			return fmt.Errorf("report: chart %s: %w", path, err)
		}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign = -0.5 // centred over the bar
			l.TextStyle[i].YAlign = 0    // above the whisker
		}
		l.Offset = vg.Point{Y: vg.Points(3)}
		p.Add(l)
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.6, float64(len(cs))-0.4
	if top > 0 {
		p.Y.Max = niceCeil(top * 1.15) // room for the value labels
	}
	if err := p.Save(6*vg.Inch, 3.5*vg.Inch, path); err != nil {
		return fmt.Errorf("report: save chart %s: %w", path, err)
	}
	return nil
}
