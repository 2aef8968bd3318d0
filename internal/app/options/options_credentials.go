package options

import (
	"github.com/spf13/pflag"
)

// addCredentialFlags registers --use-service-account-credentials. Every
// other upstream flag is now accepted with upstream's meaning, so nothing
// is registered only to be refused.
func (o *Options) addCredentialFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.UseServiceAccountCredentials, "use-service-account-credentials", o.UseServiceAccountCredentials,
		"If true, each controller talks to the API server as its own ServiceAccount in kube-system, named after the controller, with tokens from TokenRequest; the ServiceAccounts must exist (the chart creates them).")
}
