// Package dist is the root of the distribution module: how Stratus is
// packaged for a cluster. It is its own Go module so that the main module
// (and so the stratus binary) does not depend on Helm or
// go-containerregistry.
//
//   - chart renders and lints charts/stratus with the Helm SDK and keeps
//     the plain manifests in deploy/ equal to what the chart renders
//     (cmd/manifests writes them: make manifests);
//   - image assembles the OCI image without a container engine (cmd/image:
//     make image);
//   - monitoring reads the PromQL of the chart's Grafana dashboard and
//     Prometheus rules, and its tests hold them to the metrics a running
//     Stratus exports and run the rules' unit tests through promtool, the
//     Prometheus rule-test code as a library.
package dist
