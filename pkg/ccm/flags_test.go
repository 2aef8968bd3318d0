package ccm_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/stratus-ccm/stratus/pkg/ccm"
)

// vendorFlags is a provider's own flag set, as kube-vip's main adds
// --OutSideCluster to upstream's command.
func vendorFlags(outside *bool) cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fss.FlagSet("kube-vip").BoolVar(outside, "OutSideCluster", false, "Start Controller outside of cluster")
	return fss
}

// TestFlagDefaultsAndProviderFlags: defaults set as DigitalOcean's and
// kube-vip's mains set them are the values without flags and what --help
// shows; the command line still wins, a list default is replaced rather
// than appended to; the provider's flags parse into its variables.
func TestFlagDefaultsAndProviderFlags(t *testing.T) {
	var outside bool
	cfg := ccm.Config{
		FlagDefaults: map[string]string{
			"cloud-provider": "digitalocean", "authentication-skip-lookup": "true",
			"allow-untagged-cloud": "true", "controllers": "*,-node-route-controller",
		},
		Flags: vendorFlags(&outside),
	}
	cmd := ccm.NewCommand(cfg)
	if err := cmd.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	fs := cmd.Flags()
	for name, want := range map[string]string{
		"cloud-provider": "digitalocean", "authentication-skip-lookup": "true", "allow-untagged-cloud": "true",
		"controllers": "[*,-node-route-controller]", "OutSideCluster": "false",
	} {
		f := fs.Lookup(name)
		if f == nil {
			t.Fatalf("no flag --%s", name)
		}
		if f.Value.String() != want || f.DefValue != want || f.Changed {
			t.Errorf("--%s = %q (default %q, changed %t), want %q as an unchanged default", name, f.Value, f.DefValue, f.Changed, want)
		}
	}
	var help bytes.Buffer
	cmd.SetOut(&help)
	_ = cmd.Usage()
	if !strings.Contains(help.String(), `--cloud-provider string`) || !strings.Contains(help.String(), `(default "digitalocean")`) ||
		!strings.Contains(help.String(), "--OutSideCluster") {
		t.Errorf("--help does not show the provider's default and flag:\n%s", help.String())
	}

	cmd = ccm.NewCommand(cfg)
	if err := cmd.ParseFlags([]string{"--cloud-provider=other", "--controllers=service-lb-controller", "--OutSideCluster"}); err != nil {
		t.Fatal(err)
	}
	fs = cmd.Flags()
	if got := fs.Lookup("cloud-provider").Value.String(); got != "other" {
		t.Errorf("--cloud-provider on the command line = %q, want it to win over the default", got)
	}
	if got := fs.Lookup("controllers").Value.String(); got != "[service-lb-controller]" {
		t.Errorf("--controllers = %s, want the command line's list alone", got)
	}
	if !outside {
		t.Error("the provider's --OutSideCluster did not reach its variable")
	}
}

// TestProviderFlagSetsKeepTheirOrder: every flag of every set is added.
func TestProviderFlagSetsKeepTheirOrder(t *testing.T) {
	var fss cliflag.NamedFlagSets
	fss.FlagSet("a").String("a-one", "", "")
	fss.FlagSet("b").Int("b-one", 0, "")
	fss.FlagSet("a").Bool("a-two", false, "")
	cmd := ccm.NewCommand(ccm.Config{Flags: fss})
	var got []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, "a-") || strings.HasPrefix(f.Name, "b-") {
			got = append(got, f.Name)
		}
	})
	if strings.Join(got, ",") != "a-one,a-two,b-one" {
		t.Errorf("provider flags = %v", got)
	}
}
