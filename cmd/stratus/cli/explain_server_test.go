package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stratus-ccm/stratus/internal/explain"
)

func TestExplainServerIsTheFlagThenTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ flag, env, want string }{
		{"", "", DefaultExplainServer},
		{"", "https://127.0.0.1:41234", "https://127.0.0.1:41234"},
		{"https://10.0.0.5:10258", "https://127.0.0.1:41234", "https://10.0.0.5:10258"},
		{"https://10.0.0.5:10258", "", "https://10.0.0.5:10258"},
	} {
		if got := explainServer(c.flag, c.env); got != c.want {
			t.Errorf("explainServer(%q, %q) = %q, want %q", c.flag, c.env, got, c.want)
		}
	}
}

// explainServerStub is a controller manager's /debug/explain that counts
// the requests it answers.
func explainServerStub(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var asked atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != explain.Path {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":{"kind":"node","name":"n1"},"leading":true,"known":false}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

// TestExplainAsksTheSandboxsURL: without --server, the command asks the
// controller manager $STRATUS_CCM_URL names (the sandbox's env file exports
// it); with --server, that one.
func TestExplainAsksTheSandboxsURL(t *testing.T) {
	fromEnv, envAsked := explainServerStub(t)
	fromFlag, flagAsked := explainServerStub(t)
	t.Setenv(ccmURLEnv, fromEnv.URL)
	run := func(args ...string) {
		t.Helper()
		cmd := newExplainCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"node", "n1", "--token", "t", "--insecure-skip-tls-verify"}, args...))
		if err := cmd.ExecuteContext(t.Context()); err != nil {
			t.Fatalf("explain %v: %v\n%s", args, err, out.String())
		}
	}
	run()
	if envAsked.Load() != 1 || flagAsked.Load() != 0 {
		t.Errorf("without --server: $%s asked %d times, the other %d; want once and never", ccmURLEnv, envAsked.Load(), flagAsked.Load())
	}
	run("--server", fromFlag.URL)
	if envAsked.Load() != 1 || flagAsked.Load() != 1 {
		t.Errorf("with --server: $%s asked %d times in all, --server %d; want the flag to win", ccmURLEnv, envAsked.Load(), flagAsked.Load())
	}
}
