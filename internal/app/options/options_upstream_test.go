package options_test

import (
	"sort"
	"strconv"
	"testing"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	ccmoptions "k8s.io/cloud-provider/options"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/app/options"
)

// upstreamFlags returns the flag set of upstream's cloud-controller-manager
// v0.37.2, built by upstream's own options package as its command does
// (named flag sets, then the global logging flags and --version).
func upstreamFlags(t *testing.T) *pflag.FlagSet {
	t.Helper()
	opts, err := ccmoptions.NewCloudControllerManagerOptions()
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"cloud-node-controller", "cloud-node-lifecycle-controller", "service-lb-controller", "node-route-controller"}
	fss := opts.Flags(all, nil, nil, nil, nil)
	fs := pflag.NewFlagSet("upstream", pflag.ContinueOnError)
	for _, f := range fss.FlagSets {
		fs.AddFlagSet(f)
	}
	logsapi.AddFlags(logsapi.NewLoggingConfiguration(), fs)
	fs.Bool("version", false, "")
	return fs
}

// differentDefaults are the defaults Stratus changes on purpose, each
// documented in docs/operations.md.
var differentDefaults = map[string]bool{
	"concurrent-node-syncs":    true,
	"concurrent-service-syncs": true,
}

func TestEveryUpstreamFlagRegisteredWithUpstreamDefault(t *testing.T) {
	up := upstreamFlags(t)
	o := app.NewOptions()
	ours := pflag.NewFlagSet("stratus", pflag.ContinueOnError)
	o.AddFlags(ours)
	var names []string
	up.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	if len(names) < 80 {
		t.Fatalf("upstream's flag set has only %d flags; the comparison would prove little", len(names))
	}
	for _, name := range names {
		u := up.Lookup(name)
		s := ours.Lookup(name)
		switch {
		case s == nil:
			t.Errorf("--%s: upstream flag not registered", name)
		case s.Hidden && s.Deprecated == "":
			t.Errorf("--%s: registered hidden, so it is refused; upstream accepts it", name)
		case s.Value.Type() != u.Value.Type() && name != "version":
			t.Errorf("--%s: type %s, upstream %s", name, s.Value.Type(), u.Value.Type())
		case s.DefValue != u.DefValue && !differentDefaults[name]:
			t.Errorf("--%s: default %q, upstream %q", name, s.DefValue, u.DefValue)
		}
	}
}

func TestFeatureGatesKnowUpstreamGates(t *testing.T) {
	o, err := parse(t, "--cloud-provider=x",
		"--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=true,ControllerManagerReleaseLeaderElectionLockOnExit=true,LoggingBetaOptions=false")
	if err != nil {
		t.Fatal(err)
	}
	if !o.FeatureGate.Enabled("CloudControllerManagerWatchBasedRoutesReconciliation") || o.FeatureGate.Enabled("LoggingBetaOptions") {
		t.Errorf("gates not applied: %s", o.FeatureGate)
	}
	// Parsing must not leak into another Options' gate.
	if app.NewOptions().FeatureGate.Enabled("CloudControllerManagerWatchBasedRoutesReconciliation") {
		t.Error("a fresh Options sees another's --feature-gates")
	}
}

func TestVersionFlag(t *testing.T) {
	for arg, want := range map[string]options.VersionFlag{"--version": options.VersionTrue, "--version=raw": options.VersionRaw, "--version=false": options.VersionFalse} {
		o, err := parse(t, arg)
		if o.Version != want {
			t.Errorf("%s: got %q (%v), want %q", arg, o.Version, err, want)
		}
	}
}

// The API server library reads its gates from the global gate; applying
// the options must carry an explicit --feature-gates value there, and only
// the explicit ones.
func TestApplyProcessWideSetsLibraryGates(t *testing.T) {
	const gate, other = "UnauthenticatedHTTP2DOSMitigation", "RemoteRequestHeaderUID"
	global := utilfeature.DefaultMutableFeatureGate
	before, otherBefore := global.Enabled(gate), global.Enabled(other)
	t.Cleanup(func() { _ = global.SetFromMap(map[string]bool{gate: before}) })
	o, err := parse(t, "--cloud-provider=x", "--feature-gates="+gate+"="+strconv.FormatBool(!before))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.ApplyProcessWide(); err != nil {
		t.Fatal(err)
	}
	if global.Enabled(gate) == before {
		t.Errorf("--feature-gates=%s=%v did not reach the API server library's gate", gate, !before)
	}
	if global.Enabled(other) != otherBefore {
		t.Error("a gate not given on the command line changed")
	}
}
