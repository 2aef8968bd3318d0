package componentmetrics

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/internal/version"
)

// MetricBuildInfo is component-base's build information gauge.
const MetricBuildInfo = "kubernetes_build_info"

// semver picks major and minor out of a version such as v0.1.0 or
// v1.2.3-rc.1, as Kubernetes' version stamping fills them.
var semver = regexp.MustCompile(`^v?(\d+)\.(\d+)`)

// buildInfo is component-base's kubernetes_build_info with this build's
// values: the Stratus version and commit where a Kubernetes binary has
// its own, since that is what identifies the running code.
func buildInfo(info version.Info) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricBuildInfo,
		Help: "[BETA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
	}, []string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"})
	var major, minor string
	if m := semver.FindStringSubmatch(info.Version); m != nil {
		major, minor = m[1], m[2]
	}
	g.WithLabelValues(major, minor, info.Version, info.Commit, "", "", info.GoVersion, runtime.Compiler, info.Platform).Set(1)
	return g
}

// RegisterBuildInfo adds kubernetes_build_info to reg; one already there
// (the command run again on the same registry) is kept.
func RegisterBuildInfo(reg prometheus.Registerer) error {
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(buildInfo(version.Get())); err != nil && !errors.As(err, &are) {
		return fmt.Errorf("register %s: %w", MetricBuildInfo, err)
	}
	return nil
}
