package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratus-ccm/stratus/internal/explain"
)

// The identity that reads the controller manager's /metrics (and
// /debug/explain, for `stratus explain --token`): the secure
// port authorizes a bearer token against the API server, and the
// sandbox's kubeconfig holds client certificates, not a token.
const (
	metricsReader = "stratus-metrics-reader"
	// metricsTokenTTL is the token's lifetime; it is renewed at half of it
	// while the sandbox runs, and at every start (the API server's signing
	// key is new each run, so an old token stops working).
	metricsTokenTTL = 24 * time.Hour
)

// MetricsTokenFile is the file in the state dir holding the token.
const MetricsTokenFile = "metrics-token"

// startMetricsReader creates the ServiceAccount and its RBAC, writes a
// fresh token and keeps renewing it.
func (s *sandbox) startMetricsReader(ctx context.Context) error {
	if err := s.ensureMetricsRBAC(ctx); err != nil {
		return err
	}
	if err := s.renewMetricsToken(ctx); err != nil {
		return err
	}
	go renewEvery(ctx, metricsTokenTTL/2, "the metrics reader token", s.renewMetricsToken)
	return nil
}

func (s *sandbox) ensureMetricsRBAC(ctx context.Context) error {
	objs := []func() error{
		func() error {
			_, err := s.kube.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Create(ctx, &corev1.ServiceAccount{
				ObjectMeta: metav1.ObjectMeta{Name: metricsReader, Namespace: metav1.NamespaceSystem}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := s.kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
				Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/healthz", "/readyz", "/livez", explain.Path}, Verbs: []string{"get"}}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := s.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReader},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: metricsReader, Namespace: metav1.NamespaceSystem}},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objs {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("sandbox: metrics reader: %w", err)
		}
	}
	return nil
}

func (s *sandbox) renewMetricsToken(ctx context.Context) error {
	ttl := int64(metricsTokenTTL.Seconds())
	tr, err := s.kube.CoreV1().ServiceAccounts(metav1.NamespaceSystem).CreateToken(ctx, metricsReader,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: metrics reader token: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.state, MetricsTokenFile), []byte(tr.Status.Token+"\n"), 0o600); err != nil {
		return fmt.Errorf("sandbox: write metrics token: %w", err)
	}
	s.metricsToken = tr.Status.Token
	return s.writeEnv()
}

// ccmURL is the controller manager's secure port: /metrics, /healthz,
// /readyz.
func (s *sandbox) ccmURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(s.o.CCMPort)
}

// MetricsCurl is the command line that reads the controller manager's
// metrics with the token from the env file.
const MetricsCurl = `curl -sk -H "Authorization: Bearer $STRATUS_METRICS_TOKEN" "$STRATUS_METRICS_URL"`
