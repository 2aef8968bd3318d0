package testbed

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Process is a child process a test started.
type Process struct {
	Cmd     *exec.Cmd
	LogFile string
	done    chan struct{}
	err     error
}

// StartProcess runs binary with args, output to logFile, and kills it (and
// its process group) when t ends if it is still running.
func StartProcess(t testing.TB, logFile, binary string, args ...string) *Process {
	t.Helper()
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		t.Fatalf("start %s: %v", binary, err)
	}
	p := &Process{Cmd: cmd, LogFile: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			if b, err := os.ReadFile(logFile); err == nil {
				t.Logf("--- %s (pid %d) log tail:\n%s", binary, cmd.Process.Pid, tail(b, 4000))
			}
		}
	})
	return p
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error {
	return p.Cmd.Process.Signal(sig)
}

// Wait waits up to d for the process to end and returns its exit code.
func (p *Process) Wait(d time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(d):
		return -1, fmt.Errorf("process %d still running after %v", p.Pid(), d)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), nil
	}
	if p.err != nil {
		return -1, p.err
	}
	return 0, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
