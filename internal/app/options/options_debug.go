package options

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	metricsfeatures "k8s.io/component-base/metrics/features"
	cmfeatures "k8s.io/controller-manager/pkg/features"

	// The JSON log format, as upstream's binaries link it, so that
	// --logging-format=json works.
	_ "k8s.io/component-base/logs/json/register"

	"github.com/stratus-ccm/stratus/internal/version"
)

// newFeatureGate returns a gate that knows every feature upstream's
// cloud-controller-manager knows: the generic API server's, the
// controller manager's, and the logging and metrics ones. It is the
// process's own copy, so that parsing --feature-gates (in tests, many
// times) does not touch the global gate until ApplyProcessWide.
func newFeatureGate() (featuregate.MutableVersionedFeatureGate, error) {
	fg := featuregate.NewFeatureGate()
	if err := fg.AddVersioned(utilfeature.DefaultMutableFeatureGate.GetAllVersioned()); err != nil {
		return fg, fmt.Errorf("feature gates: generic API server features: %w", err)
	}
	if err := cmfeatures.SetupCurrentKubernetesSpecificFeatureGates(fg); err != nil {
		return fg, fmt.Errorf("feature gates: controller manager features: %w", err)
	}
	if err := logsapi.AddFeatureGates(fg); err != nil {
		return fg, fmt.Errorf("feature gates: logging features: %w", err)
	}
	if err := metricsfeatures.AddFeatureGates(fg); err != nil {
		return fg, fmt.Errorf("feature gates: metrics features: %w", err)
	}
	return fg, nil
}

// loggingFlagOf names the flag behind each field of the logging
// configuration, for error messages.
var loggingFlagOf = map[string]string{
	"format":         "--logging-format",
	"verbosity":      "-v",
	"vmodule":        "--vmodule",
	"flushFrequency": "--log-flush-frequency",
	"options":        "--log-json-split-stream/--log-text-split-stream",
}

// addDebuggingFlags registers --profiling, --contention-profiling,
// --feature-gates, the logging flags and --version.
func (o *Options) addDebuggingFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling,
		"Enable profiling via the secure port at /debug/pprof/ (behind authentication and authorization, as upstream's), and /debug/flags/v to change the log verbosity.")
	fs.BoolVar(&o.ContentionProfiling, "contention-profiling", o.ContentionProfiling,
		"Enable block profiling, if profiling is enabled.")
	o.FeatureGate.AddFlag(fs)
	logsapi.AddFlags(o.Logs, fs)
	fs.Var(&o.Version, "version", "--version, --version=raw prints version information and quits.")
	fs.Lookup("version").NoOptDefVal = "true"
}

// validateDebugging checks the feature gates (upstream's dependency and
// lock rules) and the logging configuration against them.
func (o *Options) validateDebugging() []error {
	var errs []error
	if o.setupErr != nil {
		errs = append(errs, o.setupErr)
	}
	for _, err := range o.FeatureGate.Validate() {
		errs = append(errs, fmt.Errorf("--feature-gates: %w", err))
	}
	for _, err := range logsapi.Validate(o.Logs, o.FeatureGate, nil) {
		flag, ok := loggingFlagOf[strings.SplitN(err.Field, ".", 2)[0]]
		if !ok {
			flag = "logging flags"
		}
		errs = append(errs, fmt.Errorf("%s: %w", flag, err))
	}
	return errs
}

// PrepareProcess is what the command does before Run: print the version
// and report done when --version was given, else apply the process-wide
// settings.
func (o *Options) PrepareProcess(w io.Writer) (done bool, err error) {
	if done, err := o.PrintVersionIfRequested(w); done || err != nil {
		return done, err
	}
	return false, o.ApplyProcessWide()
}

// ApplyProcessWide applies the settings that belong to the process rather
// than to one run: the logging configuration, the feature gates that the
// k8s.io/apiserver serving and authentication code reads from the global
// gate, and the block profile rate. The command calls it once, before Run.
func (o *Options) ApplyProcessWide() error {
	if err := logsapi.ValidateAndApply(o.Logs, o.FeatureGate); err != nil {
		return fmt.Errorf("logging flags: %w", err)
	}
	global := utilfeature.DefaultMutableFeatureGate
	set := map[string]bool{}
	for name := range global.GetAll() {
		if o.FeatureGate.ExplicitlySet(name) {
			set[string(name)] = o.FeatureGate.Enabled(name)
		}
	}
	if len(set) > 0 {
		if err := global.SetFromMap(set); err != nil {
			return fmt.Errorf("--feature-gates: %w", err)
		}
	}
	if o.Profiling && o.ContentionProfiling {
		runtime.SetBlockProfileRate(1)
	}
	return nil
}

// VersionFlag is --version: false, true (print and exit) or raw (print the
// full build information and exit), as upstream's verflag.
type VersionFlag string

// Version flag values.
const (
	VersionFalse VersionFlag = ""
	VersionTrue  VersionFlag = "true"
	VersionRaw   VersionFlag = "raw"
)

// IsBoolFlag lets a bare --version mean --version=true.
func (v *VersionFlag) IsBoolFlag() bool { return true }

// Set parses true/false/raw. Upstream's --version=vX.Y.Z overrides the
// version a Kubernetes component reports; Stratus' version is stamped at
// build time, so that form is refused rather than half-honoured.
func (v *VersionFlag) Set(s string) error {
	if s == string(VersionRaw) {
		*v = VersionRaw
		return nil
	}
	if strings.HasPrefix(s, "v") {
		return fmt.Errorf("%q: overriding the reported version is not supported (Stratus' version is set at build time); use --version or --version=raw", s)
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q: want true, false or raw", s)
	}
	*v = VersionFalse
	if b {
		*v = VersionTrue
	}
	return nil
}

func (v *VersionFlag) String() string {
	if *v == VersionFalse {
		return "false"
	}
	return string(*v)
}

// Type names the flag's value in --help.
func (v *VersionFlag) Type() string { return "version" }

// PrintVersionIfRequested writes the version when --version was given and
// reports whether it did, so the command can exit 0 without running.
func (o *Options) PrintVersionIfRequested(w io.Writer) (bool, error) {
	info := version.Get()
	switch o.Version {
	case VersionTrue:
		_, err := fmt.Fprintln(w, info.String())
		return true, err
	case VersionRaw:
		_, err := fmt.Fprintf(w, "%#v\n", info)
		return true, err
	case VersionFalse:
	}
	return false, nil
}
