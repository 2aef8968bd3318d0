// Package chart renders and lints the Helm chart charts/stratus with the
// Helm SDK, as `helm template` and `helm lint --strict` do, and defines the
// variants rendered into deploy/ as plain manifests.
package chart
