package app

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// ChartControllersFile is where, in the chart's directory, the chart reads
// the controller table: every name it knows a controller by, whether '*'
// enables it, the flags it needs, its ServiceAccount and its RBAC. The
// chart holds no controller name of its own, so it cannot drift from the
// daemon's table.
const ChartControllersFile = "files/controllers.yaml"

// chartHeader starts the generated file.
const chartHeader = "# Generated from the controller table (internal/app/table.go) by `make manifests`; do not edit.\n"

// chartController is one controller as the chart reads it. Every field is
// written, empty or not, so that the templates need not test for a
// missing key.
type chartController struct {
	// Aliases are the other names --controllers accepts for it.
	Aliases      []string `json:"aliases"`
	OffByDefault bool     `json:"offByDefault"`
	// ServiceAccount is the one its role is bound to with
	// useServiceAccountCredentials, and whose token the daemon requests.
	ServiceAccount string   `json:"serviceAccount"`
	Requires       []string `json:"requires"`
	EnabledBy      string   `json:"enabledBy"`
	RBAC           rbac     `json:"rbac"`
}

// ChartControllers is the content of ChartControllersFile for the built-in
// controllers; `make manifests` writes it into the chart.
func ChartControllers() ([]byte, error) { return chartControllers(builtinControllers()) }

// chartControllers is ChartControllersFile's content for table, keyed by
// name: Helm ranges over a map in key order, so the chart renders the
// controllers' objects in the same order whatever the table's.
func chartControllers(table []controllerEntry) ([]byte, error) {
	out := make(map[string]chartController, len(table))
	for _, e := range table {
		if _, dup := out[e.Name]; dup {
			return nil, fmt.Errorf("controller table: %s appears twice", e.Name)
		}
		r := e.rbac
		r.Rules = nonNil(r.Rules)
		r.Writes = nonNil(r.Writes)
		out[e.Name] = chartController{
			Aliases:        nonNil(e.Aliases),
			OffByDefault:   e.OffByDefault,
			ServiceAccount: e.account(),
			Requires:       nonNil(e.requires),
			EnabledBy:      e.chartEnabledBy,
			RBAC:           r,
		}
	}
	b, err := yaml.Marshal(map[string]any{"controllers": out})
	if err != nil {
		return nil, fmt.Errorf("controller table for the chart: %w", err)
	}
	return append([]byte(chartHeader), b...), nil
}

// nonNil makes a nil list an empty one, which YAML writes as [] rather
// than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
