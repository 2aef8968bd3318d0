package monitoring

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// Expr is one PromQL expression and where it was found.
type Expr struct {
	// Where names the panel and query, or the rule.
	Where string
	Query string
}

// grafanaVars stand in for the dashboard's Grafana variables, so that its
// queries parse as Prometheus would receive them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "${job}", ".*", "$job", ".*")

// labelValues matches the dashboard's variable queries, Grafana's
// label_values(METRIC, LABEL), which are not PromQL.
var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)$`)

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

type dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// DashboardExprs returns every query of a Grafana dashboard's panels (rows'
// panels included), with the Grafana variables replaced, and its query
// variables' metric selectors. A panel target without an expression is an
// error: a panel that shows nothing.
func DashboardExprs(data []byte) ([]Expr, error) {
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var out []Expr
	var walk func([]panel) error
	walk = func(ps []panel) error {
		for _, p := range ps {
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					return fmt.Errorf("dashboard: panel %q query %s has no expr", p.Title, t.RefID)
				}
				out = append(out, Expr{Where: fmt.Sprintf("panel %q query %s", p.Title, t.RefID), Query: grafanaVars.Replace(t.Expr)})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			return nil, fmt.Errorf("dashboard: variable %s: query %q is not label_values(METRIC, LABEL)", v.Name, v.Definition)
		}
		out = append(out, Expr{Where: "variable " + v.Name, Query: m[1]})
	}
	return out, nil
}

// RuleExprs returns the expression of every rule of a Prometheus rules
// file, which rulefmt validates as Prometheus does when it loads it.
func RuleExprs(data []byte) ([]Expr, error) {
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("rules: %w", errs[0])
	}
	var out []Expr
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			out = append(out, Expr{Where: fmt.Sprintf("group %s rule %s", g.Name, name), Query: r.Expr})
		}
	}
	return out, nil
}

// MetricNames parses a PromQL expression and returns the metric names its
// selectors read, sorted. A selector without a metric name is an error:
// it could match anything, so nothing would prove it reads Stratus.
func MetricNames(query string) ([]string, error) {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", query, err)
	}
	var names []string
	var inspectErr error
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			inspectErr = fmt.Errorf("%q: selector %s names no metric", query, vs)
			return inspectErr
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return nil
	})
	if inspectErr != nil {
		return nil, inspectErr
	}
	slices.Sort(names)
	return names, nil
}

// ExposedNames returns the names of the samples in a text exposition of
// /metrics: a histogram's _bucket, _sum and _count, a summary's series
// and its _sum and _count, every other family's name.
func ExposedNames(r io.Reader) (map[string]bool, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics exposition: %w", err)
	}
	out := map[string]bool{}
	for name, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name], out[name+"_sum"], out[name+"_count"] = true, true, true
		default:
			out[name] = true
		}
	}
	return out, nil
}
