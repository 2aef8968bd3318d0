package serving

import (
	"context"
	"fmt"
	"net"

	netutils "k8s.io/utils/net"

	genericserver "k8s.io/apiserver/pkg/server"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

// servingConfig is what the secure port needs: the listener with its TLS
// settings, and the delegated authenticator and authorizer.
type servingConfig struct {
	serving *genericserver.SecureServingInfo
	authn   genericserver.AuthenticationInfo
	authz   genericserver.AuthorizationInfo
}

// newServingConfig binds the secure port and builds upstream's delegated
// authentication and authorization from the options. A self-signed
// certificate is made first when none is given (kept in --cert-dir when
// set). Without --authentication-kubeconfig or --authorization-kubeconfig,
// the daemon's own --kubeconfig is used, so one kubeconfig is enough outside
// a cluster; in a cluster upstream's in-cluster lookup applies.
func newServingConfig(ctx context.Context, o *options.Options) (*servingConfig, error) {
	ss := *o.SecureServing
	var alternateIPs []net.IP
	if !ss.BindAddress.IsUnspecified() {
		alternateIPs = append(alternateIPs, ss.BindAddress)
	}
	alternateIPs = append(alternateIPs, netutils.ParseIPSloppy("127.0.0.1"))
	if err := ss.MaybeDefaultWithSelfSignedCerts("localhost", nil, alternateIPs); err != nil {
		return nil, fmt.Errorf("--cert-dir=%s: self-signed serving certificate: %w", ss.ServerCert.CertDirectory, err)
	}
	cfg := &servingConfig{}
	if err := ss.ApplyTo(&cfg.serving); err != nil {
		return nil, fmt.Errorf("--secure-port=%d --bind-address=%s: %w", o.SecureServing.BindPort, o.SecureServing.BindAddress, err)
	}
	kubeconfig := o.KubeconfigPath()
	authn := *o.Authentication
	if authn.RemoteKubeConfigFile == "" {
		authn.RemoteKubeConfigFile = kubeconfig
	}
	authn = withoutMissingRequestHeaderCA(ctx, authn)
	if err := authn.ApplyTo(&cfg.authn, cfg.serving, nil); err != nil {
		cfg.close()
		return nil, fmt.Errorf("delegated authentication (--authentication-kubeconfig=%s): %w", authn.RemoteKubeConfigFile, err)
	}
	authz := *o.Authorization
	if authz.RemoteKubeConfigFile == "" {
		authz.RemoteKubeConfigFile = kubeconfig
	}
	if err := authz.ApplyTo(&cfg.authz); err != nil {
		cfg.close()
		return nil, fmt.Errorf("delegated authorization (--authorization-kubeconfig=%s): %w", authz.RemoteKubeConfigFile, err)
	}
	return cfg, nil
}

// close releases the listener of a config that will not be served.
func (c *servingConfig) close() {
	if c.serving != nil && c.serving.Listener != nil {
		_ = c.serving.Listener.Close()
	}
}
