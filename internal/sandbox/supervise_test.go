package sandbox

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// syncBuffer is an io.Writer safe for the supervisor goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func testSandbox(t *testing.T) (*sandbox, *syncBuffer) {
	out := &syncBuffer{}
	s := &sandbox{out: out, began: time.Now(), logs: t.TempDir(), state: t.TempDir(),
		stopping: make(chan struct{}), failed: make(chan struct{}), backoff: 10 * time.Millisecond}
	t.Cleanup(func() { s.shutdown(context.Background()) })
	return s, out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s: %v", what, err)
	}
}

func TestSupervisorRestartsAChildThatExits(t *testing.T) {
	s, out := testSandbox(t)
	p, err := s.supervise(t.Context(), "sleeper", func() (*child, error) { return startChild("sleeper", s.logs, "/bin/sh", "-c", "exec sleep 600") })
	if err != nil {
		t.Fatal(err)
	}
	first := p.current().pid()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a restart", func() bool { return p.Restarts() == 1 })
	second := p.current().pid()
	if second == first || syscall.Kill(second, 0) != nil {
		t.Fatalf("restarted child %d (first %d) is not running", second, first)
	}
	if got := out.String(); !strings.Contains(got, "sleeper exited after") || !strings.Contains(got, "signal: killed") || !strings.Contains(got, "sleeper restarted") {
		t.Fatalf("no line says the child was restarted:\n%s", got)
	}
	if err := s.childrenAlive(); err != nil {
		t.Fatalf("one exit must not fail the sandbox: %v", err)
	}
	// Stopping the sandbox ends the child and supervision for good.
	s.shutdown(context.Background())
	if syscall.Kill(second, 0) == nil {
		t.Fatalf("child %d outlived the sandbox", second)
	}
	if p.Restarts() != 1 {
		t.Fatalf("a child stopped by the sandbox was restarted: %d restarts", p.Restarts())
	}
}

func TestSupervisorFailsOnAChildThatKeepsFailing(t *testing.T) {
	s, _ := testSandbox(t)
	if _, err := s.supervise(t.Context(), "crasher", func() (*child, error) {
		return startChild("crasher", s.logs, "/bin/sh", "-c", "echo 'fatal: --bogus-flag is not a flag'; exit 3")
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.failed:
	case <-time.After(20 * time.Second):
		t.Fatal("a child that keeps failing did not fail the sandbox")
	}
	err := s.childrenAlive()
	if err == nil || !strings.Contains(err.Error(), "crasher keeps failing") || !strings.Contains(err.Error(), "exit status 3") ||
		!strings.Contains(err.Error(), "fatal: --bogus-flag is not a flag") {
		t.Fatalf("the error must name the child, its exit and its last log lines: %v", err)
	}
	// A wait of the start-up (for the nodes, for the demo) ends at once
	// with it, not at its timeout.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	werr := waitFor(ctx, 10*time.Millisecond, "nodes that never come", func(context.Context) (bool, error) { return false, s.childrenAlive() })
	if werr == nil || ctx.Err() != nil || werr.Error() != err.Error() {
		t.Fatalf("a wait while a child keeps failing ended with %v (context: %v), want the child's error", werr, ctx.Err())
	}
}

func TestStopStraysEndsProcessesStartedByHand(t *testing.T) {
	s, out := testSandbox(t)
	// A process configured from the sandbox's kubeconfig, as a controller
	// manager run by hand from the env file's flags would be.
	// The shell keeps its arguments (a trap, not exec) and ends on SIGTERM
	// once its short sleep returns.
	const loop = `trap "exit 0" TERM; while :; do sleep 0.2; done`
	stray, err := startChild("by-hand", s.logs, "/bin/sh", "-c", loop, "sh", "--kubeconfig="+s.state+"/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	other, err := startChild("unrelated", s.logs, "/bin/sh", "-c", loop, "sh", "--kubeconfig="+s.state+"-other/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	defer other.stop(5 * time.Second)
	s.stopStrays()
	select {
	case <-stray.exited():
	case <-time.After(15 * time.Second):
		t.Fatal("the process started by hand outlived the sandbox")
	}
	select {
	case <-other.exited():
		t.Fatal("a process of another state dir was stopped")
	default:
	}
	if !strings.Contains(out.String(), "started by hand against this sandbox") {
		t.Fatalf("no line says what was stopped:\n%s", out.String())
	}
}

// A child that needs kube-apiserver and exits while the API server is not
// ready is not failing on its own: it is restarted once the API server is
// back, and only its exits after that count towards "keeps failing".
func TestSupervisorWaitsForTheAPIServerBeforeCountingFailures(t *testing.T) {
	s, out := testSandbox(t)
	var ready atomic.Bool
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && ready.Load() {
			_, _ = w.Write([]byte("ok"))
			return
		}
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	t.Cleanup(apiserver.Close)
	var err error
	if s.kube, err = kubernetes.NewForConfig(&rest.Config{Host: apiserver.URL}); err != nil {
		t.Fatal(err)
	}
	var starts atomic.Int32
	if _, err := s.superviseAPIClient(t.Context(), "client", func() (*child, error) {
		starts.Add(1)
		return startChild("client", s.logs, "/bin/sh", "-c", "echo 'connection refused'; exit 1")
	}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the exit to be put down to the API server", func() bool {
		return strings.Contains(out.String(), "client exited after") && strings.Contains(out.String(), "while kube-apiserver is not ready")
	})
	if n := starts.Load(); n != 1 {
		t.Fatalf("restarted %d times while the API server was not ready", n-1)
	}
	ready.Store(true)
	select {
	case <-s.failed:
	case <-time.After(20 * time.Second):
		t.Fatal("a child that keeps failing with the API server ready did not fail the sandbox")
	}
	// One exit put down to the API server, then maxQuickFailures of its own.
	if n := starts.Load(); n != 1+maxQuickFailures {
		t.Fatalf("started %d times before the sandbox gave up, want %d", n, 1+maxQuickFailures)
	}
}

// A wait that times out reports the last error seen while it waited, not
// one caused by its own deadline.
func TestWaitForReportsTheLastErrorBeforeItsDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := waitFor(ctx, 10*time.Millisecond, "the demo", func(ctx context.Context) (bool, error) {
		if ctx.Err() != nil {
			return false, errors.New("client rate limiter Wait returned an error: context deadline exceeded")
		}
		return false, errors.New("its load balancer is in error: bind: address already in use")
	})
	if err == nil || !strings.Contains(err.Error(), "address already in use") || strings.Contains(err.Error(), "rate limiter") {
		t.Fatalf("timed-out wait said %v", err)
	}
}
