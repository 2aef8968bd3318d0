package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Restart policy of supervised children. A controller manager that loses
// its lease exits by design and must simply come back; a child that cannot
// stay up (a bad flag, a port taken) must stop the sandbox at once with its
// last words instead of being restarted forever.
const (
	restartBackoff    = 500 * time.Millisecond
	maxRestartBackoff = 8 * time.Second
	// stableAfter is how long a child must run for its next exit to count
	// as a fresh failure rather than one more in a row.
	stableAfter = 30 * time.Second
	// maxQuickFailures exits in a row, each within stableAfter of its
	// start, mean the child keeps failing.
	maxQuickFailures = 5
	tailLines        = 20
)

// proc is a running process a supervisor watches: a child the sandbox
// started itself, or etcd and kube-apiserver (see controlPlaneProc).
type proc interface {
	exited() <-chan struct{}
	// exitError says how it ended, never nil once it has.
	exitError() error
	startedAt() time.Time
	pid() int
	logFile() string
	stop(grace time.Duration)
}

// supervised is a child process the sandbox keeps running.
type supervised struct {
	name  string
	start func() (proc, error)
	// needsAPI marks a child that cannot run without kube-apiserver: its
	// exits while the API server is down are the API server's doing, not
	// failures of its own, and it is restarted once the API server is back.
	needsAPI bool

	mu       sync.Mutex
	cur      proc
	stopped  bool
	restarts int
}

func (p *supervised) current() proc {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// Restarts is how many times the child was started again.
func (p *supervised) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// restart starts the child again unless the sandbox is stopping; it
// returns nil, nil then.
func (p *supervised) restart() (proc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil, nil
	}
	c, err := p.start()
	if err != nil {
		return nil, err
	}
	p.cur = c
	p.restarts++
	return c, nil
}

// stop ends supervision and the current process.
func (p *supervised) stop(grace time.Duration) {
	p.mu.Lock()
	p.stopped = true
	c := p.cur
	p.mu.Unlock()
	c.stop(grace)
}

// supervise starts a child and keeps it running until the sandbox stops.
func (s *sandbox) supervise(ctx context.Context, name string, start func() (*child, error)) (*supervised, error) {
	return s.superviseChild(ctx, name, false, start)
}

// superviseAPIClient supervises a child that needs kube-apiserver (see
// supervised.needsAPI).
func (s *sandbox) superviseAPIClient(ctx context.Context, name string, start func() (*child, error)) (*supervised, error) {
	return s.superviseChild(ctx, name, true, start)
}

func (s *sandbox) superviseChild(ctx context.Context, name string, needsAPI bool, start func() (*child, error)) (*supervised, error) {
	return s.superviseProc(ctx, name, needsAPI, func() (proc, error) {
		c, err := start()
		if err != nil {
			return nil, err
		}
		return c, nil
	})
}

// superviseProc starts a process and keeps it running until the sandbox
// stops.
func (s *sandbox) superviseProc(ctx context.Context, name string, needsAPI bool, start func() (proc, error)) (*supervised, error) {
	c, err := start()
	if err != nil {
		return nil, err
	}
	p := &supervised{name: name, start: start, cur: c, needsAPI: needsAPI}
	s.procs = append(s.procs, p)
	go s.keep(ctx, p)
	return p, nil
}

// keep restarts p's child whenever it exits, with a growing backoff, and
// fails the sandbox when it keeps failing.
func (s *sandbox) keep(ctx context.Context, p *supervised) {
	quick := 0
	backoff := s.backoff
	for {
		c := p.current()
		select {
		case <-c.exited():
		case <-s.stopping:
			return
		}
		select {
		case <-s.stopping:
			return
		default:
		}
		ran := time.Since(c.startedAt())
		if ran >= stableAfter {
			quick, backoff = 0, s.backoff
		}
		if p.needsAPI && !s.apiReady(ctx) {
			// Not a failure of its own: restart it once the API server is
			// back (its own supervisor restarts it).
			fmt.Fprintf(s.out, "[%6.1fs] %s exited after %s (%v) while kube-apiserver is not ready; restarting it once kube-apiserver is\n",
				time.Since(s.began).Seconds(), p.name, ran.Round(100*time.Millisecond), c.exitError())
			if !s.waitAPIReady(ctx) {
				return
			}
		} else {
			quick++
			if quick >= maxQuickFailures {
				s.fail(fmt.Errorf("sandbox: %s keeps failing: it exited %d times in a row, each within %s of starting (last: %w); the last lines of %s:\n%s",
					p.name, quick, stableAfter, c.exitError(), c.logFile(), tail(c.logFile(), tailLines)))
				return
			}
			fmt.Fprintf(s.out, "[%6.1fs] %s exited after %s (%v); restarting it in %s\n",
				time.Since(s.began).Seconds(), p.name, ran.Round(100*time.Millisecond), c.exitError(), backoff)
			select {
			case <-time.After(backoff):
			case <-s.stopping:
				return
			}
			backoff = min(2*backoff, maxRestartBackoff)
		}
		next, err := p.restart()
		if err != nil {
			s.fail(fmt.Errorf("sandbox: restart %s: %w", p.name, err))
			return
		}
		if next == nil {
			return
		}
		fmt.Fprintf(s.out, "[%6.1fs] %s restarted (pid %d)\n", time.Since(s.began).Seconds(), p.name, next.pid())
	}
}

// fail records the first fatal error and wakes whoever waits on failed.
func (s *sandbox) fail(err error) {
	s.failOnce.Do(func() {
		s.fatal = err
		close(s.failed)
	})
}

// childrenAlive returns the fatal error of a child that keeps failing, so
// that a wait fails at once instead of running into its timeout.
func (s *sandbox) childrenAlive() error {
	select {
	case <-s.failed:
		return &fatalError{err: s.fatal}
	default:
		return nil
	}
}

// fatalError ends a waitFor at once: waiting longer cannot help.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// tail returns the last n lines of a log file, indented.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "    (log unreadable: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("    ")
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// stopStrays stops processes the sandbox did not start but that run
// against it: anything whose arguments name its kubeconfig or a file
// under its run directory, such as a controller manager started by hand
// from the env file's flags. They would otherwise outlive the sandbox,
// retrying against an API server that is gone.
func (s *sandbox) stopStrays() {
	var strays []int
	for _, pid := range s.strayPIDs() {
		if err := syscall.Kill(pid, syscall.SIGTERM); err == nil {
			fmt.Fprintf(s.out, "stopping process %d, started by hand against this sandbox\n", pid)
			strays = append(strays, pid)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range strays {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func (s *sandbox) strayPIDs() []int {
	if s.state == "" {
		return nil
	}
	markers := []string{filepath.Join(s.state, "kubeconfig"), filepath.Join(s.state, "run") + string(filepath.Separator)}
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(raw), "\x00") {
			if slices.ContainsFunc(markers, func(m string) bool { return strings.Contains(arg, m) }) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
