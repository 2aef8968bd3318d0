package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// shared is one control plane and one build of testdata/fakeccm for the
// tests that can share them (they use distinct Lease names and identities).
var shared struct {
	mu  sync.Mutex
	dir string
	env *testbed.Env
	bin string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func sharedDir(t *testing.T) string {
	t.Helper()
	if shared.dir == "" {
		d, err := os.MkdirTemp("", "stratus-app-test-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = d
	}
	return shared.dir
}

// sharedEnv returns the package's control plane, starting it on first use.
func sharedEnv(t *testing.T) *testbed.Env {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.env == nil {
		bins := testbed.RequireBinaries(t, "kube-apiserver", "etcd")
		env, err := testbed.StartEnv(bins, sharedDir(t))
		if err != nil {
			t.Fatal(err)
		}
		shared.env = env
	}
	return shared.env
}

// buildFakeCCM builds the stratus command with a provider that is only in
// upstream's global registry, once per test binary.
func buildFakeCCM(t *testing.T) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.bin == "" {
		out := filepath.Join(sharedDir(t), "fakeccm")
		cmd := exec.Command("go", "build", "-race", "-o", out, "./testdata/fakeccm")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build fakeccm: %v\n%s", err, b)
		}
		shared.bin = out
	}
	return shared.bin
}

// httpsGet GETs path on the daemon's secure port (self-signed certificate)
// with an optional bearer token, and returns the status and body.
func httpsGet(ctx context.Context, port int, path, token string) (int, string) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the daemon serves a self-signed cert
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitReady waits until /readyz on port answers 200.
func waitReady(ctx context.Context, t *testing.T, port int) {
	t.Helper()
	var code int
	var body string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		code, body = httpsGet(ctx, port, "/readyz?verbose", "")
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("/readyz on port %d never answered 200; last %d: %s", port, code, body)
	}
}
