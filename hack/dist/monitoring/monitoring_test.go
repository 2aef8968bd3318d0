package monitoring_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"

	"github.com/stratus-ccm/stratus/hack/dist/monitoring"
	"github.com/stratus-ccm/stratus/hack/dist/promtool"
)

const (
	dashboardFile = "../../../deploy/monitoring/stratus-dashboard.json"
	rulesFile     = "../../../deploy/monitoring/stratus-rules.yaml"
	rulesTests    = "../../../deploy/monitoring/testdata/stratus-rules.test.yaml"
)

// exprs returns every PromQL expression of the dashboard and the rules
// that deploy/ ships (the chart's, as TestDeployIsRenderedFromTheChart
// keeps them).
func exprs(t *testing.T) []monitoring.Expr {
	t.Helper()
	dash, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	out, err := monitoring.DashboardExprs(dash)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	r, err := monitoring.RuleExprs(rules)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, r...)
}

// usedMetrics maps every metric name the dashboard and the rules read to
// the first place that reads it.
func usedMetrics(t *testing.T) map[string]string {
	t.Helper()
	used := map[string]string{}
	for _, e := range exprs(t) {
		names, err := monitoring.MetricNames(e.Query)
		if err != nil {
			t.Errorf("%s: %v", e.Where, err)
			continue
		}
		for _, n := range names {
			if _, ok := used[n]; !ok {
				used[n] = e.Where
			}
		}
	}
	return used
}

// TestExpressionsParse: every query of the dashboard and every rule is
// PromQL that Prometheus' own parser accepts, and names its metrics.
func TestExpressionsParse(t *testing.T) {
	all := exprs(t)
	var alerts int
	for _, e := range all {
		if strings.Contains(e.Where, " rule ") {
			alerts++
		}
	}
	if len(all)-alerts < 20 || alerts != 5 {
		t.Fatalf("%d dashboard queries and %d rules, want at least 20 and 5", len(all)-alerts, alerts)
	}
	used := usedMetrics(t)
	for _, want := range []string{"stratus_cloud_requests_total", "stratus_cloud_throttled_total", "stratus_cloud_pacing_rate",
		"stratus_cloud_request_duration_seconds_bucket", "stratus_node_initializations_total", "stratus_service_syncs_total",
		"stratus_leader_is_leading", "workqueue_depth"} {
		if _, ok := used[want]; !ok {
			t.Errorf("no query reads %s", want)
		}
	}
}

// TestParsingCanFail proves the checks above reject what they should.
func TestParsingCanFail(t *testing.T) {
	for _, q := range []string{`sum(rate(stratus_cloud_requests_total[5m])`, `rate({result="error"}[5m])`} {
		if _, err := monitoring.MetricNames(q); err == nil {
			t.Errorf("MetricNames(%q) = nil error", q)
		}
	}
	if _, err := monitoring.RuleExprs([]byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up >\n")); err == nil {
		t.Error("a rule that does not parse was accepted")
	}
	if _, err := monitoring.DashboardExprs([]byte(`{"panels": [{"title": "p", "targets": [{"refId": "A"}]}]}`)); err == nil {
		t.Error("a panel query without an expression was accepted")
	}
}

// TestAlertsFire runs deploy/monitoring's rule unit tests with promtool's
// own code (`promtool test rules`): each alert fires when its condition
// lasts and stays silent otherwise.
func TestAlertsFire(t *testing.T) {
	var junit bytes.Buffer
	code := promtool.RulesUnitTestResult(&junit, promqltest.LazyLoaderOpts{}, parser.NewParser(parser.Options{}),
		nil, true, false, false, rulesTests)
	if code != 0 {
		t.Fatalf("promtool test rules %s failed (exit %d):\n%s", rulesTests, code, junit.String())
	}
	// Every alert of the rules file is tested.
	tests, err := os.ReadFile(rulesTests)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	r, err := monitoring.RuleExprs(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r {
		name := e.Where[strings.LastIndex(e.Where, " ")+1:]
		if !strings.Contains(string(tests), "alertname: "+name+"\n        exp_alerts:\n          - ") {
			t.Errorf("%s: no test expects alert %s to fire", filepath.Base(rulesTests), name)
		}
	}
}

// TestAlertTestsCanFail: the same code rejects a test whose expectation
// is wrong, so a passing TestAlertsFire means the alerts behave.
func TestAlertTestsCanFail(t *testing.T) {
	data, err := os.ReadFile(rulesTests)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	// The no-leader case expects the alert 9 minutes in; at 7 it is still
	// pending (the leader stopped at 3, the alert waits 5).
	bad := strings.Replace(string(data), "eval_time: 9m\n", "eval_time: 7m\n", 1)
	if !strings.Contains(bad, "eval_time: 7m\n        alertname: StratusNoLeader") {
		t.Fatal("could not alter the no-leader test")
	}
	// The same layout as deploy/monitoring, so the test finds the rules.
	dir := t.TempDir()
	file := filepath.Join(dir, "testdata", "bad.test.yaml")
	if err := os.Mkdir(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stratus-rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	var junit bytes.Buffer
	if code := promtool.RulesUnitTestResult(&junit, promqltest.LazyLoaderOpts{}, parser.NewParser(parser.Options{}),
		nil, false, false, false, file); code == 0 {
		t.Fatal("a test expecting StratusNoLeader to stay silent while no replica leads passed")
	}
}
