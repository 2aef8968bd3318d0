package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stratus-ccm/stratus/pkg/testbed"
	"github.com/stratus-ccm/stratus/pkg/testbed/fakeprovider"
)

// The test bed's API server, like many small clusters', publishes a client
// CA but no request-header (front-proxy) CA. The daemon says once that
// front-proxy authentication is off, never repeats upstream's CA
// controller error about the missing key, and still authenticates client
// certificates signed by the published client CA.
func TestNoRequestHeaderCAIsSaidOnce(t *testing.T) {
	env := sharedEnv(t)
	ctx := testbed.Context(t, 2*time.Minute)
	cm, err := env.Clientset.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["requestheader-client-ca-file"] != "" || cm.Data["client-ca-file"] == "" {
		t.Fatalf("this test needs a cluster with a client CA and no request-header CA; the test bed publishes keys %v", keys(cm.Data))
	}
	port := testbed.FreePort(t)
	logFile := filepath.Join(t.TempDir(), "ccm.log")
	testbed.StartProcess(t, logFile, buildFakeCCM(t), "controller-manager",
		"--cloud-provider="+fakeprovider.Name, "--kubeconfig="+env.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--leader-elect-resource-name=authlookup-test", "--v=2")
	waitReady(ctx, t, port)

	// The admin's client certificate is signed by the published client CA.
	cert, err := tls.X509KeyPair(env.Config.CertData, env.Config.KeyData)
	if err != nil {
		t.Fatalf("admin client certificate: %v", err)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // the daemon serves a self-signed cert
		Certificates:       []tls.Certificate{cert},
	}}}
	var code int
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
		resp, err := c.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		code = resp.StatusCode
		return code == http.StatusOK, nil
	}); err != nil {
		t.Errorf("/metrics with the admin's client certificate: %d, want 200", code)
	}

	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if n := strings.Count(log, "front-proxy authentication is off"); n != 1 {
		t.Errorf("the missing request-header CA was said %d times, want once:\n%s", n, log)
	}
	if strings.Contains(log, "missing content for CA bundle") {
		t.Errorf("the CA controller's error about the missing key is logged:\n%s", log)
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
