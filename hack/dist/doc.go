// Package dist is the root of the distribution module: how Stratus is
// packaged for a cluster and released. It is its own Go module so that the
// main module (and so the stratus binary) does not depend on Helm,
// go-containerregistry or apidiff.
//
//   - chart renders and lints charts/stratus with the Helm SDK and keeps
//     the plain manifests in deploy/ equal to what the chart renders
//     (cmd/manifests writes them: make manifests);
//   - image assembles the OCI image without a container engine (cmd/image:
//     make image);
//   - release cuts a release from a commit, reproducibly (cmd/release:
//     make release VERSION=vX.Y.Z): the image, the binaries, the versioned
//     chart, the manifests pinned by digest, the SBOM, the notes from
//     CHANGELOG.md and the checksums;
//   - apicheck holds the exported Go API of pkg/ to CHANGELOG.md against the
//     last release's record in hack/release/api (cmd/api: make api-check,
//     make api-baseline);
//   - monitoring reads the PromQL of the chart's Grafana dashboard and
//     Prometheus rules, and its tests hold them to the metrics a running
//     Stratus exports and run the rules' unit tests through promtool, the
//     Prometheus rule-test code as a library.
package dist
