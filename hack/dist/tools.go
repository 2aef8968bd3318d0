//go:build tools

package dist

// The helm CLI is built from this module (make's bin/helm), so that it
// compiles against the packages the chart's tests already compile, at the
// Helm SDK version go.mod pins, instead of resolving a module graph of its own.
import _ "helm.sh/helm/v3/cmd/helm"
