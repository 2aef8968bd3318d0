package faults

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const (
	// Short lease timings, in the same proportions as upstream's 15/10/2 s,
	// so that a failover or a restart after SIGKILL costs seconds.
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = time.Second
	// driftPeriod is --orphaned-load-balancer-check-period: drift must be
	// repaired within one.
	driftPeriod = 2 * time.Second
	// orphanGrace is --orphaned-load-balancer-grace-period.
	orphanGrace = 3 * time.Second
	// deletionWindow is --node-deletion-window.
	deletionWindow = 15 * time.Second
	// restartDelay stands in for the kubelet's restart backoff.
	restartDelay    = 200 * time.Millisecond
	maxRestartDelay = 3200 * time.Millisecond
)

// replica is one Stratus controller manager (bin/stratus), supervised as
// the kubelet supervises a Pod with restartPolicy Always: when its process
// exits (it lost the lease while kube-apiserver was down, a test SIGKILLed
// it) it is started again, until the test stops it for good.
type replica struct {
	w    *world
	name string
	// port serves /readyz (caches synced, lease client working), the same
	// across restarts.
	port    int
	certDir string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	starts  int
	log     string // the current process' log file
	began   time.Time
	stopped bool
	stop    chan struct{} // closed by kill(false)
	done    chan struct{} // closed when the supervisor has ended
}

func (w *world) startReplica(name string) *replica {
	r := &replica{w: w, name: name, port: testbed.FreePort(w.t), certDir: w.t.TempDir(),
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := r.spawn(); err != nil {
		w.t.Fatal(err)
	}
	go r.supervise()
	w.t.Cleanup(func() { r.kill(false) })
	return r
}

func (r *replica) args() []string {
	w := r.w
	return []string{
		"controller-manager",
		"--cloud-provider=localcloud",
		"--cloud-config=" + w.cloudCfg,
		"--kubeconfig=" + w.kubeconfig,
		"--cluster-name=" + clusterName,
		"--leader-elect=true",
		"--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
		"--node-monitor-period=1s",
		"--orphaned-load-balancer-check-period=" + driftPeriod.String(),
		// The orphan collector runs, so that the two-clusters scenario
		// would see it reach for the other cluster's load balancers.
		"--delete-orphaned-load-balancers",
		"--orphaned-load-balancer-grace-period=" + orphanGrace.String(),
		// Hybrid: the foreign Nodes of the hybrid scenario are not ours.
		"--cloud-provider-platforms=localcloud",
		// A short deletion window, so that the mass-outage scenario sees
		// the cap hold and then let the held deletions through.
		"--node-deletion-window=" + deletionWindow.String(),
		"--allocate-node-cidrs=false",
		"--configure-cloud-routes=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(r.port),
		"--cert-dir=" + r.certDir,
		"--authentication-kubeconfig=" + w.kubeconfig,
		// The test's control plane has no front proxy: reading its
		// (absent) request-header CA would only log errors.
		"--authentication-skip-lookup=true",
		"--authorization-kubeconfig=" + w.kubeconfig,
		"--v=2",
	}
}

// spawn starts the process, its output in a new log file.
func (r *replica) spawn() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return errStopped
	}
	r.starts++
	r.log = r.w.logFile(fmt.Sprintf("%s-%d", r.name, r.starts))
	r.began = time.Now()
	out, err := os.Create(r.log)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(r.w.binDir, "stratus"), r.args()...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("start %s: %w", r.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(exited)
	}()
	r.cmd, r.exited = cmd, exited
	return nil
}

// supervise restarts the process whenever it exits, until stop, with the
// kubelet's doubling backoff (scaled down), reset by a process that ran
// for a while.
func (r *replica) supervise() {
	defer close(r.done)
	delay := restartDelay
	for {
		r.mu.Lock()
		exited := r.exited
		r.mu.Unlock()
		select {
		case <-exited:
		case <-r.stop:
			r.mu.Lock()
			cmd := r.cmd
			r.mu.Unlock()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return
		}
		r.mu.Lock()
		ran := time.Since(r.began)
		r.mu.Unlock()
		if ran > 10*time.Second {
			delay = restartDelay
		}
		select {
		case <-time.After(delay):
		case <-r.stop:
			return
		}
		delay = min(2*delay, maxRestartDelay)
		if err := r.spawn(); err != nil {
			return
		}
	}
}

var errStopped = errors.New("replica stopped")

// kill SIGKILLs the running process and waits for it to exit; with
// restart the supervisor starts it again, without it stays down.
func (r *replica) kill(restart bool) {
	r.mu.Lock()
	if !restart {
		if !r.stopped {
			r.stopped = true
			close(r.stop)
		}
		r.mu.Unlock()
		<-r.done
		return
	}
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// startCount is how many processes the supervisor has started.
func (r *replica) startCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts
}

// insecure reads a replica's /readyz: its serving certificate is
// self-signed, on loopback.
var insecure = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // loopback, self-signed

// ready reports whether the current process answers /readyz with 200:
// its caches are synced and its lease client works, leader or standby.
func (r *replica) ready(ctx context.Context) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(r.port)+"/readyz", nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := insecure.Do(req)
	if err != nil {
		return false, err.Error()
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status
}
