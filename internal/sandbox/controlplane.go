package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// controlPlaneProc is etcd's or kube-apiserver's current process, as the
// supervisor sees it. The control plane stops both itself (the API server
// before etcd, after every other child), so stop only ends supervision.
type controlPlaneProc struct {
	plane   *localcluster.ControlPlane
	c       localcluster.Component
	pidNum  int
	done    <-chan struct{}
	started time.Time
	log     string
}

func (p *controlPlaneProc) exited() <-chan struct{} { return p.done }
func (p *controlPlaneProc) startedAt() time.Time    { return p.started }
func (p *controlPlaneProc) pid() int                { return p.pidNum }
func (p *controlPlaneProc) logFile() string         { return p.log }
func (p *controlPlaneProc) stop(time.Duration)      {}

func (p *controlPlaneProc) exitError() error {
	if err := p.plane.ExitError(p.c); err != nil {
		return err
	}
	return fmt.Errorf("%s exited", p.c)
}

// superviseControlPlane keeps etcd and kube-apiserver running: one that
// exits is started again on its port, with its data and certificates (so
// tokens stay valid), like any other child.
func (s *sandbox) superviseControlPlane(ctx context.Context) error {
	for _, c := range []localcluster.Component{localcluster.Etcd, localcluster.APIServer} {
		current := func() (proc, error) {
			pid, done, err := s.plane.Watch(c)
			if err != nil {
				return nil, err
			}
			return &controlPlaneProc{plane: s.plane, c: c, pidNum: pid, done: done, started: time.Now(),
				log: filepath.Join(s.logs, string(c)+".log")}, nil
		}
		first := true
		if _, err := s.superviseProc(ctx, string(c), false, func() (proc, error) {
			if !first {
				ctx, cancel := s.untilStopping(ctx)
				defer cancel()
				if err := s.plane.Restart(ctx, c); err != nil {
					return nil, err
				}
			}
			first = false
			return current()
		}); err != nil {
			return err
		}
	}
	return nil
}

// untilStopping is ctx, ended also when the sandbox begins to stop.
func (s *sandbox) untilStopping(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// apiReady reports whether kube-apiserver answers /readyz.
func (s *sandbox) apiReady(ctx context.Context) bool {
	if s.kube == nil {
		return true
	}
	ctx, cancel := s.untilStopping(ctx)
	defer cancel()
	ctx, cancelProbe := context.WithTimeout(ctx, 2*time.Second)
	defer cancelProbe()
	return s.kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil
}

// waitAPIReady waits until kube-apiserver is ready; false means the
// sandbox is stopping (or the control plane keeps failing).
func (s *sandbox) waitAPIReady(ctx context.Context) bool {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for !s.apiReady(ctx) {
		select {
		case <-s.stopping:
			return false
		case <-s.failed:
			return false
		case <-t.C:
		}
	}
	return true
}
