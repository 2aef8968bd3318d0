//go:build tools

package release

// The SBOM generator make release builds into bin/, pinned by this
// module's go.mod so that two releases of one commit describe it with the
// same tool.
import _ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
