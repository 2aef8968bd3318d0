package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// child is a process the sandbox started and must stop.
type child struct {
	name    string
	cmd     *exec.Cmd
	log     string
	started time.Time
	done    chan struct{}
	err     error
}

// startChild runs binary in its own process group, so that a Ctrl-C in the
// terminal reaches only the sandbox, which then stops children in order.
// Pdeathsig ends the child if the sandbox itself is killed outright.
func startChild(name, logDir, binary string, args ...string) (*child, error) {
	logPath := filepath.Join(logDir, name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: log file: %w", name, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, binary, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, started: time.Now(), done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		_ = out.Close()
		close(c.done)
	}()
	return c, nil
}

// stop sends SIGTERM and waits up to grace before SIGKILL.
func (c *child) stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// exitError is why the child ended, never nil once it has.
func (c *child) exitError() error {
	if c.err == nil {
		return errors.New("exit status 0")
	}
	return c.err
}

// exited returns a channel closed when the child ends.
func (c *child) exited() <-chan struct{} { return c.done }

func (c *child) startedAt() time.Time { return c.started }

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) logFile() string { return c.log }

// waitFor polls cond every interval until it returns true or ctx ends; an
// error from cond is retried (and reported if the wait times out), except a
// fatalError, returned at once.
func waitFor(ctx context.Context, interval time.Duration, what string, cond func(context.Context) (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if fatal := (*fatalError)(nil); errors.As(err, &fatal) {
			return fatal.err
		}
		if err != nil && ctx.Err() == nil {
			// (An error once ctx has ended is only that.)
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}
