package options

import (
	"github.com/spf13/pflag"
)

// addCredentialFlags registers --use-service-account-credentials. Every
// other upstream flag is now accepted with upstream's meaning, so nothing
// is registered only to be refused.
func (o *Options) addCredentialFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.UseServiceAccountCredentials, "use-service-account-credentials", o.UseServiceAccountCredentials,
		"If true, use individual service account credentials for each controller: each talks to the API server as a ServiceAccount in kube-system "+
			"under upstream's names (node-controller for the node, node lifecycle and node IPAM controllers, service-controller, route-controller; "+
			"a provider's own controller under its own name), with tokens the daemon requests (TokenRequest). "+
			"A missing ServiceAccount is created, as upstream's client builder does, which needs create on serviceaccounts in kube-system. "+
			"Caches, leader election and the token requests keep the daemon's credentials.")
}
