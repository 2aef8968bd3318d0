package options

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	cloudprovider "k8s.io/cloud-provider"
	cliflag "k8s.io/component-base/cli/flag"
)

// servingPairName names the self-signed pair in --cert-dir, as upstream's.
const servingPairName = "cloud-controller-manager"

// newSecureServingOptions returns upstream cloud-controller-manager's
// serving defaults: port 10258 on every address, a self-signed certificate
// kept in memory unless --cert-dir is given.
func newSecureServingOptions() *apiserveroptions.SecureServingOptions {
	s := apiserveroptions.NewSecureServingOptions()
	s.ServerCert.CertDirectory = ""
	s.ServerCert.PairName = servingPairName
	s.BindPort = cloudprovider.CloudControllerManagerPort
	return s
}

// newAuthenticationOptions returns upstream's delegated authentication
// defaults; without a kubeconfig the reviews are skipped, not fatal.
func newAuthenticationOptions() *apiserveroptions.DelegatingAuthenticationOptions {
	a := apiserveroptions.NewDelegatingAuthenticationOptions()
	a.RemoteKubeConfigFileOptional = true
	return a
}

// addServingFlags registers the secure serving, authentication,
// authorization and webhook groups through upstream's own AddFlags.
func (o *Options) addServingFlags(fs *pflag.FlagSet) {
	o.SecureServing.AddFlags(fs)
	o.Authentication.AddFlags(fs)
	o.Authorization.RemoteKubeConfigFileOptional = true
	o.Authorization.AddFlags(fs)
	o.Webhook.AddFlags(fs, nil, nil)
	o.WebhookServing.AddFlags(fs)
	// Upstream's help says an empty kubeconfig makes every request
	// anonymous (or forbidden); serving (internal/app/serving) falls back to the
	// daemon's own kubeconfig instead, and the help says so.
	fs.Lookup("authentication-kubeconfig").Usage = "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create tokenreviews.authentication.k8s.io. " + kubeconfigFallback
	fs.Lookup("authorization-kubeconfig").Usage = "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create subjectaccessreviews.authorization.k8s.io. " + kubeconfigFallback
}

// kubeconfigFallback is what an empty --authentication-kubeconfig or
// --authorization-kubeconfig means (see KubeconfigPath).
const kubeconfigFallback = "If empty, the daemon's own --kubeconfig is used ($KUBECONFIG outside a cluster without --kubeconfig or --master), else the in-cluster configuration."

// validateServing runs upstream's validation of each serving group and
// adds what Stratus checks on top (both TLS files or neither, TLS names
// parse, no webhooks since this build has none).
func (o *Options) validateServing() []error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	errs = append(errs, o.WebhookServing.Validate()...)
	s := o.SecureServing
	if (s.ServerCert.CertKey.CertFile == "") != (s.ServerCert.CertKey.KeyFile == "") {
		errs = append(errs, fmt.Errorf("--tls-cert-file=%q --tls-private-key-file=%q: give both or neither",
			s.ServerCert.CertKey.CertFile, s.ServerCert.CertKey.KeyFile))
	}
	errs = append(errs, validateTLSNames("", s)...)
	errs = append(errs, validateTLSNames("webhook-", o.WebhookServing.SecureServingOptions)...)
	errs = append(errs, o.validateWebhooks()...)
	return errs
}

// validateTLSNames parses the TLS version and cipher names now, so a typo
// is a startup error naming the flag; upstream parses them only when the
// listener is created.
func validateTLSNames(prefix string, s *apiserveroptions.SecureServingOptions) []error {
	var errs []error
	if _, err := cliflag.TLSVersion(s.MinTLSVersion); err != nil {
		errs = append(errs, fmt.Errorf("--%stls-min-version=%s: %w", prefix, s.MinTLSVersion, err))
	}
	if len(s.CipherSuites) > 0 {
		if _, err := cliflag.TLSCipherSuites(s.CipherSuites); err != nil {
			errs = append(errs, fmt.Errorf("--%stls-cipher-suites=%s: %w", prefix, strings.Join(s.CipherSuites, ","), err))
		}
	}
	if len(s.CurvePreferences) > 0 {
		if _, err := cliflag.TLSCurvePreferences(s.CurvePreferences); err != nil {
			errs = append(errs, fmt.Errorf("--%stls-curve-preferences=%v: %w", prefix, s.CurvePreferences, err))
		}
	}
	return errs
}

// validateWebhooks accepts upstream's webhook flags with upstream's
// meaning in a binary that registers no webhook (upstream's own
// cloud-controller-manager registers none either): --webhooks may be empty
// or "*", which enable nothing, and --webhook-secure-port binds nothing
// then. Naming a webhook is an error, as it is upstream.
func (o *Options) validateWebhooks() []error {
	var errs []error
	for _, w := range o.Webhook.Webhooks {
		if w == "*" || w == "" {
			continue
		}
		errs = append(errs, fmt.Errorf("--webhooks=%s: %q is not a known webhook: Stratus serves no admission webhooks (nor does upstream's cloud-controller-manager without a provider that adds them); drop the flag or use '*'",
			strings.Join(o.Webhook.Webhooks, ","), strings.TrimPrefix(w, "-")))
	}
	if p := o.WebhookServing.BindPort; p != 0 && p == o.SecureServing.BindPort {
		errs = append(errs, fmt.Errorf("--webhook-secure-port=%d: cannot be the same value as --secure-port", p))
	}
	return errs
}

// ServingEnabled reports whether the secure port is served at all.
func (o *Options) ServingEnabled() bool { return o.SecureServing.BindPort != 0 }

// KubeconfigPath is the kubeconfig file the daemon uses: --kubeconfig, or,
// outside a cluster and without --master, $KUBECONFIG. Upstream stops at
// in-cluster configuration; falling back to $KUBECONFIG only where that
// cannot work lets a manifest's arguments run unchanged on a workstation.
func (o *Options) KubeconfigPath() string {
	if o.Kubeconfig != "" || o.Master != "" {
		return o.Kubeconfig
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return ""
	}
	if env := os.Getenv("KUBECONFIG"); env != "" && !strings.Contains(env, string(os.PathListSeparator)) {
		return env
	}
	return ""
}
