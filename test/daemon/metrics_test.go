package daemon_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestUpstreamNodeMetricsScraped: a daemon that initializes a Node serves
// upstream's cloud node controller histograms on its secure /metrics, one
// observation each, as a scraper with upstream's reader RBAC reads them.
func TestUpstreamNodeMetricsScraped(t *testing.T) {
	ctx := testbed.Context(t, 3*time.Minute)
	env := testbed.Start(t)
	srv, conf := startCloud(t, store.Pools{Internal: netip.MustParsePrefix("127.1.205.0/24"), VIP: netip.MustParsePrefix("127.0.205.0/24")})
	cloudClient, err := lcclient.New(srv.URL(), srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cloudClient.CreateInstance(ctx, api.CreateInstanceRequest{Name: "n1", Zone: "zone-a", Region: "region-1", Type: "small"}); err != nil {
		t.Fatal(err)
	}
	port := testbed.FreePort(t)
	o := app.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{
		"--cloud-provider=" + lcprovider.ProviderName, "--cloud-config=" + conf, "--kubeconfig=" + env.Kubeconfig,
		"--leader-elect=false", "--controllers=" + node.ControllerName,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
	}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- app.Run(runCtx, o, app.Deps{Providers: providers(t), Metrics: prometheus.NewRegistry(), SkipControllerNameValidation: true})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	})
	if _, err := localcluster.CreateNode(ctx, env.Clientset, "n1", localcluster.NodeOptions{}); err != nil {
		t.Fatal(err)
	}
	var n1 *corev1.Node
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n1, err = env.Clientset.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && n1.Spec.ProviderID != "" && !slices.ContainsFunc(n1.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == cloudproviderapi.TaintExternalCloudProvider
		}), nil
	}); err != nil {
		t.Fatalf("node n1 never initialized: %v; node: %+v", err, n1)
	}
	token := metricsReaderToken(ctx, t, env.Clientset)
	body := scrape(ctx, t, port, token)
	// One Node initialized within a minute of its creation: one
	// observation each, in upstream's 64 s bucket at the latest (buckets
	// 1, 4, 16, 64, 256, 1024).
	for _, name := range []string{node.MetricTaintRemovalDelay, node.MetricInitialNodeSyncDelay} {
		for _, line := range []string{name + "_count 1", name + `_bucket{le="64"} 1`, name + `_bucket{le="1024"} 1`} {
			if !strings.Contains(body, "\n"+line+"\n") {
				t.Errorf("/metrics lacks %q:\n%s", line, grepLines(body, name))
			}
		}
	}
}

// metricsReaderToken is a token of a ServiceAccount bound to a role that
// may GET /metrics, as the chart's metrics-reader role grants.
func metricsReaderToken(ctx context.Context, t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	const name, ns = "metrics-reader", "default"
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrape GETs /metrics from the daemon's secure port (its self-signed
// certificate) with token, retrying until it answers 200.
func scrape(ctx context.Context, t *testing.T, port int, token string) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the daemon serves a self-signed certificate
	}}
	var body string
	var code int
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			return false, nil
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		code, body = resp.StatusCode, string(b)
		return err == nil && code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("/metrics on port %d: last answer %d %s: %v", port, code, body, err)
	}
	return body
}

func grepLines(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
