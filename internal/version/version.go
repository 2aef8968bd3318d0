// Package version reports the build's version, set at link time with
// -ldflags "-X github.com/stratus-ccm/stratus/internal/version.version=..."
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker; never written at run time.
var (
	version = "v0.0.0-dev"
	commit  = ""
)

// Info describes this build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns this build's Info, falling back to the VCS stamp Go records.
func Get() Info {
	c := commit
	if c == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	return Info{Version: version, Commit: c, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

func (i Info) String() string {
	c := i.Commit
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("stratus %s (commit %s, %s, %s)", i.Version, c, i.GoVersion, i.Platform)
}
