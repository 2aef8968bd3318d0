package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// ServiceAccountNamespace holds the controllers' ServiceAccounts, as
// upstream's: a namespace ordinary users cannot read tokens from.
const ServiceAccountNamespace = "kube-system"

// Token lifetimes as upstream's DynamicControllerClientBuilder has them: a
// one-hour token, renewed once 80% of its life is gone (sooner after a 401,
// see transport.ResettableTokenSourceWrapTransport), and never treated as
// shorter than ten minutes, which would mean a skewed clock.
const (
	tokenExpirationSeconds = int64(3600)
	tokenLeewayPercent     = 20
	tokenMinLifetime       = 10 * time.Minute
	tokenRequestTimeout    = 30 * time.Second
)

// errServiceAccountMissing is wrapped when a controller's ServiceAccount
// does not exist.
var errServiceAccountMissing = errors.New("service account missing")

// saTokenSource mints tokens for one ServiceAccount through TokenRequest,
// with the daemon's own client. A missing ServiceAccount is created, at
// every request as upstream's client builder does (not only at start), so
// that one deleted meanwhile (by hand, or by uninstalling manifests that
// had shipped it) comes back at the next renewal or the first 401; one
// that cannot be created is reported as errServiceAccountMissing.
type saTokenSource struct {
	// ctx bounds every token request: oauth2.TokenSource has no context of
	// its own, and a request after shutdown is pointless.
	ctx  context.Context
	sas  corev1client.ServiceAccountInterface
	name string
	now  func() time.Time
}

var _ oauth2.TokenSource = (*saTokenSource)(nil)

func (s *saTokenSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(s.ctx, tokenRequestTimeout)
	defer cancel()
	tr, err := s.request(ctx)
	if apierrors.IsNotFound(err) {
		if err := createServiceAccount(ctx, s.sas, s.name); err != nil {
			return nil, err
		}
		tr, err = s.request(ctx)
	}
	who := ServiceAccountNamespace + "/" + s.name
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("--use-service-account-credentials: ServiceAccount %s: %w: %w", who, errServiceAccountMissing, err)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("--use-service-account-credentials: the daemon may not request a token for ServiceAccount %s (its role needs create on serviceaccounts/token): %w", who, err)
	case err != nil:
		return nil, fmt.Errorf("--use-service-account-credentials: token for ServiceAccount %s: %w", who, err)
	}
	now := s.now()
	lifetime := tr.Status.ExpirationTimestamp.Sub(now)
	if lifetime < tokenMinLifetime {
		lifetime = tokenMinLifetime
	}
	expiry := now.Add(lifetime - lifetime*tokenLeewayPercent/100)
	klog.FromContext(s.ctx).V(2).Info("Obtained a ServiceAccount token", "serviceAccount", who, "renewAt", expiry)
	return &oauth2.Token{AccessToken: tr.Status.Token, TokenType: "Bearer", Expiry: expiry}, nil
}

func (s *saTokenSource) request(ctx context.Context) (*authenticationv1.TokenRequest, error) {
	return s.sas.CreateToken(ctx, s.name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(tokenExpirationSeconds)},
	}, metav1.CreateOptions{})
}

// createServiceAccount creates the ServiceAccount kube-system/name, as
// upstream's client builder does for a controller whose ServiceAccount is
// missing; one created meanwhile (another replica, another controller
// sharing it) is fine. Refused, the error names the ServiceAccount and
// the right the daemon lacks.
func createServiceAccount(ctx context.Context, sas corev1client.ServiceAccountInterface, name string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ServiceAccountNamespace, Name: name}}
	_, err := sas.Create(ctx, sa, metav1.CreateOptions{})
	who := ServiceAccountNamespace + "/" + name
	switch {
	case err == nil:
		klog.FromContext(ctx).Info("Created the controller's ServiceAccount", "serviceAccount", who)
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("--use-service-account-credentials: ServiceAccount %s: %w, and the daemon may not create it (its role needs create on serviceaccounts in %s): %w",
			who, errServiceAccountMissing, ServiceAccountNamespace, err)
	}
	return fmt.Errorf("--use-service-account-credentials: create ServiceAccount %s: %w", who, err)
}
