package chart_test

import (
	"strings"
	"testing"

	"github.com/stratus-ccm/stratus/hack/dist/chart"
)

// TestDashboardAndRulesAreOffByDefault: an install without Grafana or the
// Prometheus Operator gets neither object (the PrometheusRule kind would
// not even exist there).
func TestDashboardAndRulesAreOffByDefault(t *testing.T) {
	out, err := chart.Render(chartDir, chart.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"kind: PrometheusRule", "grafana_dashboard", "-dashboard\n"} {
		if strings.Contains(out, absent) {
			t.Errorf("the default install renders %q", absent)
		}
	}
}

func TestDashboardAndRulesRenderWhenEnabled(t *testing.T) {
	vals := map[string]any{
		"grafanaDashboard": map[string]any{"enabled": true, "namespace": "monitoring",
			"labels": map[string]any{"grafana_dashboard": "stratus"}, "annotations": map[string]any{"grafana_folder": "Cloud"}},
		"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"},
			"severity": "critical", "noLeaderFor": "2m", "cloudErrorRatio": 0.25, "nodeUninitializedMinutes": 30},
	}
	if err := chart.Lint(chartDir, vals); err != nil {
		t.Fatal(err)
	}
	out, err := chart.Render(chartDir, chart.Options{Values: vals})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kind: ConfigMap\nmetadata:\n  name: stratus-dashboard\n  namespace: monitoring\n",
		"grafana_dashboard: stratus", "grafana_folder: Cloud", "  stratus.json: |-\n    {\n",
		`"uid": "stratus-ccm"`, "kind: PrometheusRule", "release: prom", "severity: critical",
		"alert: StratusNoLeader", "for: 2m", "/ sum(rate(stratus_cloud_requests_total[5m])) > 0.25",
		"expr: max(stratus_node_oldest_uninitialized_node_age_seconds) > 1800\n", "summary: A Node has waited more than 30 minutes",
		"description: The oldest Node waiting for initialization has waited {{ $value | humanizeDuration }};",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered lacks %q", want)
		}
	}
}

func TestMonitoringValuesAreValidated(t *testing.T) {
	for field, vals := range map[string]map[string]any{
		"/grafanaDashboard/enable":                 {"grafanaDashboard": map[string]any{"enable": true}},
		"/grafanaDashboard/namespace":              {"grafanaDashboard": map[string]any{"namespace": "Monitoring"}},
		"/grafanaDashboard/labels":                 {"grafanaDashboard": map[string]any{"labels": map[string]any{"grafana_dashboard": 1}}},
		"/prometheusRule/noLeaderFor":              {"prometheusRule": map[string]any{"noLeaderFor": "5 minutes"}},
		"/prometheusRule/cloudErrorRatio":          {"prometheusRule": map[string]any{"cloudErrorRatio": 10}},
		"/prometheusRule/throttledRatio":           {"prometheusRule": map[string]any{"throttledRatio": 0}},
		"/prometheusRule/severity":                 {"prometheusRule": map[string]any{"severity": ""}},
		"/prometheusRule/nodeUninitializedMinutes": {"prometheusRule": map[string]any{"nodeUninitializedMinutes": "15m"}},
		"/prometheusRule/nodeUninitializedFor":     {"prometheusRule": map[string]any{"nodeUninitializedFor": 2}},
	} {
		t.Run(field, func(t *testing.T) {
			_, err := chart.Render(chartDir, chart.Options{Values: vals})
			if err == nil {
				t.Fatalf("values %v rendered", vals)
			}
			name := field[strings.LastIndex(field, "/")+1:]
			if !strings.Contains(err.Error(), name) {
				t.Errorf("values %v: error %q does not name %s", vals, err, name)
			}
		})
	}
}
