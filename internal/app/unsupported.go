package app

import (
	"github.com/spf13/pflag"
)

// unsetSentinel marks an unsupported flag that was not given.
const unsetSentinel = "\x00unset"

// unsupportedFlags are upstream cloud-controller-manager flags that Stratus
// does not implement. They are registered (hidden) so that setting one is a
// startup error naming it, rather than pflag's generic "unknown flag", and
// so that an operator moving a manifest over learns exactly what to drop.
// The bool ones accept the bare "--flag" form, as upstream's do.
var unsupportedFlags = []struct {
	name   string
	isBool bool
}{
	{"contention-profiling", true},
	{"external-cloud-volume-plugin", false},
	{"feature-gates", false},
	{"node-sync-period", false},
	{"webhooks", false},
	{"webhook-bind-address", false},
	{"webhook-cert-dir", false},
	{"webhook-disable-http2-serving", true},
	{"webhook-secure-port", false},
	{"webhook-tls-cert-file", false},
	{"webhook-tls-cipher-suites", false},
	{"webhook-tls-curve-preferences", false},
	{"webhook-tls-min-version", false},
	{"webhook-tls-private-key-file", false},
	{"webhook-tls-sni-cert-key", false},
	{"disable-http2-serving", true},
	{"http2-max-streams-per-connection", false},
	{"permit-address-sharing", true},
	{"permit-port-sharing", true},
	{"tls-cipher-suites", false},
	{"tls-curve-preferences", false},
	{"tls-min-version", false},
	{"tls-sni-cert-key", false},
	{"authentication-skip-lookup", true},
	{"authentication-token-webhook-cache-ttl", false},
	{"authentication-tolerate-lookup-failure", true},
	{"client-ca-file", false},
	{"requestheader-allowed-names", false},
	{"requestheader-client-ca-file", false},
	{"requestheader-extra-headers-prefix", false},
	{"requestheader-group-headers", false},
	{"requestheader-uid-headers", false},
	{"requestheader-username-headers", false},
	{"authorization-webhook-cache-authorized-ttl", false},
	{"authorization-webhook-cache-unauthorized-ttl", false},
}

// compatFlags are upstream flags Stratus accepts for drop-in compatibility
// although they change nothing here; each says why in its help text.
func (o *Options) addCompatFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling,
		"Accepted for compatibility: Stratus does not serve pprof endpoints, so only false is meaningful; true is rejected.")
}

func (o *Options) addUnsupportedFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.UseServiceAccountCredentials, "use-service-account-credentials", o.UseServiceAccountCredentials,
		"If true, each controller talks to the API server as its own ServiceAccount in kube-system, named after the controller, with tokens from TokenRequest; the ServiceAccounts must exist (the chart creates them).")
	o.addCompatFlags(fs)
	for _, f := range unsupportedFlags {
		v := unsetSentinel
		o.unsupported[f.name] = &v
		fs.StringVar(&v, f.name, unsetSentinel, "Not supported by Stratus.")
		if f.isBool {
			fs.Lookup(f.name).NoOptDefVal = "true"
		}
		_ = fs.MarkHidden(f.name)
	}
}
