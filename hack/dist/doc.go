// Package dist is the root of the distribution module: how Stratus is
// packaged for a cluster. It is its own Go module so that the main module
// (and so the stratus binary) does not depend on Helm or
// go-containerregistry.
//
//   - chart renders and lints charts/stratus with the Helm SDK and keeps
//     the plain manifests in deploy/ equal to what the chart renders
//     (cmd/manifests writes them: make manifests);
//   - image assembles the OCI image without a container engine (cmd/image:
//     make image).
package dist
