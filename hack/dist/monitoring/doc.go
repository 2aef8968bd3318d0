// Package monitoring reads the PromQL of Stratus' Grafana dashboard and
// Prometheus rules (charts/stratus, deploy/monitoring) and the metrics a
// running Stratus exposes, so that tests can hold the two together.
package monitoring
