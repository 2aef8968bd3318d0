package chart

import (
	"bytes"
	"fmt"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// object finds the one rendered object of kind among rendered manifests.
func object(rendered, kind string) (map[string]any, error) {
	var found map[string]any
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, fmt.Errorf("rendered manifests: %w", err)
		}
		if m["kind"] != kind {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("rendered manifests hold more than one %s", kind)
		}
		found = m
	}
	if found == nil {
		return nil, fmt.Errorf("rendered manifests hold no %s", kind)
	}
	return found, nil
}

// DashboardKey is the key of the dashboard's JSON in its ConfigMap.
const DashboardKey = "stratus.json"

// dashboardJSON is the dashboard of the rendered ConfigMap, as Grafana
// imports it.
func dashboardJSON(rendered string) ([]byte, error) {
	cm, err := object(rendered, "ConfigMap")
	if err != nil {
		return nil, err
	}
	data, _ := cm["data"].(map[string]any)
	s, ok := data[DashboardKey].(string)
	if !ok || s == "" {
		return nil, fmt.Errorf("dashboard ConfigMap has no data.%s", DashboardKey)
	}
	return []byte(s + "\n"), nil
}

// rulesFile is the spec of the rendered PrometheusRule as a plain
// Prometheus rules file (rule_files), which has the same shape.
func rulesFile(rendered string) ([]byte, error) {
	rule, err := object(rendered, "PrometheusRule")
	if err != nil {
		return nil, err
	}
	// yaml.v3 keeps each expression on one line, as it would be written
	// by hand.
	b := bytes.NewBufferString(Header)
	enc := yamlv3.NewEncoder(b)
	enc.SetIndent(2)
	if err := enc.Encode(rule["spec"]); err != nil {
		return nil, fmt.Errorf("PrometheusRule spec: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("PrometheusRule spec: %w", err)
	}
	return b.Bytes(), nil
}
