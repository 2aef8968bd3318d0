package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// ControlPlane is etcd and kube-apiserver run as child processes on the
// loopback address, with certificate authentication and RBAC.
type ControlPlane struct {
	// BinDir holds the etcd and kube-apiserver binaries.
	BinDir string
	// EtcdDataDir holds etcd's data, kept across starts.
	EtcdDataDir string
	// CertDir receives the certificates and keys, made anew on every start.
	CertDir string
	// EtcdPort and APIServerPort are the client ports on 127.0.0.1; zero
	// picks free ones.
	EtcdPort, APIServerPort int
	// APIServerArgs are added to kube-apiserver's command line, as
	// "--flag=value"; a later flag overrides an earlier one.
	APIServerArgs []string
	// ServiceAccountAdmission keeps kube-apiserver's ServiceAccount
	// admission plugin on, which mounts a token in every pod: only for a
	// cluster whose kube-controller-manager creates the namespaces'
	// default ServiceAccounts, without which the plugin refuses pods.
	ServiceAccountAdmission bool
	// EtcdLog and APIServerLog receive the processes' output; nil
	// discards it.
	EtcdLog, APIServerLog io.Writer
	// StartTimeout bounds the wait for each process to be ready; zero
	// means two minutes.
	StartTimeout time.Duration

	ca    *authority
	files pkiFiles
	host  string
	etcd  *child
	api   *child
	admin *rest.Config
}

// Start starts etcd, then kube-apiserver, and returns an admin
// (system:masters) client config once the API server is ready. On error
// nothing is left running.
func (p *ControlPlane) Start(ctx context.Context) (*rest.Config, error) {
	if p.StartTimeout <= 0 {
		p.StartTimeout = 2 * time.Minute
	}
	if err := os.MkdirAll(p.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	ca, files, err := writePKI(p.CertDir)
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	p.ca, p.files = ca, files
	if err := p.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := p.startAPIServer(ctx, files); err != nil {
		p.etcd.stop()
		return nil, err
	}
	return rest.CopyConfig(p.admin), nil
}

func (p *ControlPlane) startEtcd(ctx context.Context) error {
	port, err := portOr(p.EtcdPort)
	if err != nil {
		return err
	}
	peer, err := portOr(0)
	if err != nil {
		return err
	}
	client := "http://127.0.0.1:" + strconv.Itoa(port)
	p.etcd, err = startChild(filepath.Join(p.BinDir, "etcd"), p.EtcdLog,
		"--data-dir="+p.EtcdDataDir,
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls=http://127.0.0.1:"+strconv.Itoa(peer),
		"--initial-advertise-peer-urls=http://127.0.0.1:"+strconv.Itoa(peer),
		"--initial-cluster=default=http://127.0.0.1:"+strconv.Itoa(peer),
		// A local cluster's data is disposable; fsync costs seconds per
		// burst of writes on a busy disk.
		"--unsafe-no-fsync=true")
	if err != nil {
		return err
	}
	health := &http.Client{Timeout: 5 * time.Second}
	if err := p.etcd.waitReady(ctx, p.StartTimeout, func(ctx context.Context) bool {
		return get(ctx, health, client+"/health") == nil
	}); err != nil {
		p.etcd.stop()
		return fmt.Errorf("control plane: etcd: %w", err)
	}
	p.EtcdPort = port
	return nil
}

func (p *ControlPlane) startAPIServer(ctx context.Context, f pkiFiles) error {
	port, err := portOr(p.APIServerPort)
	if err != nil {
		return err
	}
	p.host = "https://127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(p.EtcdPort),
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + f.servingCert, "--tls-private-key-file=" + f.servingKey,
		"--client-ca-file=" + f.ca,
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + p.host,
		"--service-account-key-file=" + f.saKey, "--service-account-signing-key-file=" + f.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
	}, p.APIServerArgs...)
	if !p.ServiceAccountAdmission {
		// No controller-manager creates the default ServiceAccounts.
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	if p.api, err = startChild(filepath.Join(p.BinDir, "kube-apiserver"), p.APIServerLog, args...); err != nil {
		return err
	}
	if p.admin, err = p.UserConfig("stratus-admin", "system:masters"); err != nil {
		p.api.stop()
		return err
	}
	probe, err := rest.HTTPClientFor(p.admin)
	if err != nil {
		p.api.stop()
		return fmt.Errorf("control plane: %w", err)
	}
	if err := p.api.waitReady(ctx, p.StartTimeout, func(ctx context.Context) bool {
		return get(ctx, probe, p.host+"/readyz") == nil
	}); err != nil {
		p.api.stop()
		return fmt.Errorf("control plane: kube-apiserver: %w", err)
	}
	p.APIServerPort = port
	return nil
}

// UserConfig returns a client config authenticating as user in groups,
// with a certificate signed by the control plane's authority. What the
// user may do is up to RBAC.
func (p *ControlPlane) UserConfig(user string, groups ...string) (*rest.Config, error) {
	if p.ca == nil {
		return nil, errors.New("control plane: not started")
	}
	crt, key, err := p.ca.issue(user, groups)
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	return &rest.Config{
		Host: p.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: p.ca.certPEM, CertData: crt, KeyData: key,
		},
	}, nil
}

// Stop stops kube-apiserver, then etcd.
func (p *ControlPlane) Stop() {
	if p.api != nil {
		p.api.stop()
	}
	if p.etcd != nil {
		p.etcd.stop()
	}
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// portOr returns port, or a loopback port that was free a moment ago.
func portOr(port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// child is one control-plane process, in a process group of its own so
// that a terminal's Ctrl-C reaches the parent only, and killed if the
// parent dies without stopping it (SIGKILL of a sandbox or a test binary).
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startChild(binary string, out io.Writer, args ...string) (*child, error) {
	cmd := exec.Command(binary, args...)
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("control plane: start %s: %w", binary, err)
	}
	c := &child{name: filepath.Base(binary), cmd: cmd, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c, nil
}

// waitReady polls ready until it holds, the process exits, or timeout.
func (c *child) waitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) bool) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.done:
			return false, fmt.Errorf("%s exited: %w", c.name, c.exitErr())
		default:
		}
		return ready(ctx), nil
	})
	if err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	return nil
}

func (c *child) exitErr() error {
	if c.err == nil {
		return errors.New("exit status 0")
	}
	return c.err
}

// stopGrace is how long etcd or kube-apiserver may take to exit after
// SIGTERM before it is killed.
const stopGrace = 30 * time.Second

// stop sends SIGTERM and, after stopGrace, SIGKILL to the process group.
func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// Component names one of the control plane's processes.
type Component string

// The control plane's processes.
const (
	Etcd      Component = "etcd"
	APIServer Component = "kube-apiserver"
)

func (p *ControlPlane) child(c Component) (*child, error) {
	switch c {
	case Etcd:
		return p.etcd, nil
	case APIServer:
		return p.api, nil
	}
	return nil, fmt.Errorf("control plane: no component %q", c)
}

// Kill ends one process of a started control plane with SIGKILL, as a
// crash or an OOM kill would, and waits for it to exit.
func (p *ControlPlane) Kill(c Component) error {
	ch, err := p.child(c)
	if err != nil || ch == nil {
		return errors.Join(err, fmt.Errorf("control plane: %s not started", c))
	}
	_ = syscall.Kill(-ch.cmd.Process.Pid, syscall.SIGKILL)
	<-ch.done
	return nil
}

// Restart starts a killed (or exited) process again on the same port,
// with the same data directory and certificates, and waits until it is
// ready: what a supervisor does after a crash.
func (p *ControlPlane) Restart(ctx context.Context, c Component) error {
	ch, err := p.child(c)
	if err != nil || ch == nil {
		return errors.Join(err, fmt.Errorf("control plane: %s not started", c))
	}
	select {
	case <-ch.done:
	default:
		return fmt.Errorf("control plane: %s is still running", c)
	}
	if c == Etcd {
		return p.startEtcd(ctx)
	}
	return p.startAPIServer(ctx, p.files)
}

// Watch returns the process id of component c's current process and a
// channel closed when that process exits, for a supervisor to restart it
// (with Restart); ExitError then says how it ended.
func (p *ControlPlane) Watch(c Component) (pid int, exited <-chan struct{}, err error) {
	ch, err := p.child(c)
	if err != nil || ch == nil {
		return 0, nil, errors.Join(err, fmt.Errorf("control plane: %s not started", c))
	}
	return ch.cmd.Process.Pid, ch.done, nil
}

// ExitError says how component c's current process ended; nil while it
// runs.
func (p *ControlPlane) ExitError(c Component) error {
	ch, err := p.child(c)
	if err != nil || ch == nil {
		return errors.Join(err, fmt.Errorf("control plane: %s not started", c))
	}
	select {
	case <-ch.done:
		return ch.exitErr()
	default:
		return nil
	}
}

// Pids returns the process ids of kube-apiserver and etcd while they run.
func (p *ControlPlane) Pids() []int {
	var out []int
	for _, c := range []*child{p.api, p.etcd} {
		if c == nil {
			continue
		}
		select {
		case <-c.done:
		default:
			out = append(out, c.cmd.Process.Pid)
		}
	}
	return out
}
