package app

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestServiceAccountCredentialsHelpSaysWhatIdentitiesDo: the help of
// --use-service-account-credentials names the ServiceAccounts the built-in
// controllers run as (ServiceAccountName: upstream's names, not the
// controllers') and says that a missing one is created, as forController
// does, rather than that it must exist.
func TestServiceAccountCredentialsHelpSaysWhatIdentitiesDo(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	NewOptions().AddFlags(fs)
	help := fs.Lookup("use-service-account-credentials").Usage
	for _, e := range builtinControllers() {
		if sa := ServiceAccountName(e.Name); !strings.Contains(help, sa) {
			t.Errorf("help does not name %s, the ServiceAccount %s runs as: %q", sa, e.Name, help)
		}
	}
	for _, want := range []string{"kube-system", "missing ServiceAccount is created", "create on serviceaccounts"} {
		if !strings.Contains(help, want) {
			t.Errorf("help does not say %q: %q", want, help)
		}
	}
	for _, wrong := range []string{"named after the controller", "must exist"} {
		if strings.Contains(help, wrong) {
			t.Errorf("help says %q: %q", wrong, help)
		}
	}
}
