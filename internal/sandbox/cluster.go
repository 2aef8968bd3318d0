package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	lcapi "github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// stateFormat is bumped whenever the layout of the state dir changes in a
// way an older sandbox cannot resume.
const stateFormat = 1

type stateMarker struct {
	Format int `json:"format"`
}

// preflight checks everything that can be checked before starting a
// process, so a bad setup fails fast and leaves nothing running.
func (s *sandbox) preflight(_ context.Context) error {
	abs, err := filepath.Abs(s.o.StateDir)
	if err != nil {
		return fmt.Errorf("--state-dir=%s: %w", s.o.StateDir, err)
	}
	s.state = abs
	s.logs = filepath.Join(abs, "logs")
	if err := s.checkState(); err != nil {
		return err
	}
	bins := []string{"kube-apiserver", "etcd", "kwok"}
	if s.o.RealNodes > 0 {
		bins = append(bins, "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd",
			"containerd-shim-runc-v2", "ctr", "cni/bridge", "images/pause.tar", "images/demo.tar")
	}
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(s.o.BinDir, b)); err != nil {
			return fmt.Errorf("sandbox: %w %s in %s: build it with `make tools`, or point --bin-dir at a directory holding kube-apiserver, etcd and kwok",
				errMissingBinary, b, s.o.BinDir)
		}
	}
	ports := []struct {
		flag string
		port int
	}{{"apiserver-port", s.o.APIServerPort}, {"etcd-port", s.o.EtcdPort}, {"localcloud-port", s.o.LocalcloudPort}, {"ccm-port", s.o.CCMPort}}
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)))
		if err != nil {
			return fmt.Errorf("sandbox: port %d (--%s) is already in use: stop whatever holds it (is another sandbox running?) or pick another port with --%s",
				p.port, p.flag, p.flag)
		}
		_ = l.Close()
	}
	return nil
}

// checkState creates or validates the state dir and locks it, so two
// sandboxes never share one etcd data dir.
func (s *sandbox) checkState() error {
	markerPath := filepath.Join(s.state, "sandbox.json")
	data, err := os.ReadFile(markerPath)
	switch {
	case err == nil:
		var m stateMarker
		if err := json.Unmarshal(data, &m); err != nil || m.Format != stateFormat {
			return fmt.Errorf("--state-dir=%s was written by an incompatible sandbox (format %q, this one uses %d): remove the directory or choose another --state-dir",
				s.o.StateDir, strings.TrimSpace(string(data)), stateFormat)
		}
	case errors.Is(err, os.ErrNotExist):
		entries, _ := os.ReadDir(s.state)
		if len(entries) > 0 {
			return fmt.Errorf("--state-dir=%s exists and is not a sandbox state dir (no sandbox.json): choose an empty or new directory", s.o.StateDir)
		}
		if err := os.MkdirAll(s.state, 0o700); err != nil {
			return fmt.Errorf("--state-dir=%s: %w", s.o.StateDir, err)
		}
		m, _ := json.Marshal(stateMarker{Format: stateFormat})
		if err := os.WriteFile(markerPath, m, 0o600); err != nil {
			return fmt.Errorf("--state-dir=%s: %w", s.o.StateDir, err)
		}
	default:
		return fmt.Errorf("--state-dir=%s: %w", s.o.StateDir, err)
	}
	if err := os.MkdirAll(s.logs, 0o700); err != nil {
		return fmt.Errorf("--state-dir=%s: %w", s.o.StateDir, err)
	}
	_ = os.Remove(filepath.Join(s.state, "ready"))
	lock, err := os.OpenFile(filepath.Join(s.state, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("--state-dir=%s: %w", s.o.StateDir, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return fmt.Errorf("--state-dir=%s is in use by another running sandbox: stop it first", s.o.StateDir)
	}
	s.lock = lock
	return nil
}

// startControlPlane runs etcd (data kept in the state dir) and
// kube-apiserver on fixed loopback ports.
func (s *sandbox) startControlPlane(ctx context.Context) error {
	certDir := filepath.Join(s.state, "run", "apiserver")
	// Certificates are made fresh each run; cluster state lives in etcd.
	_ = os.RemoveAll(certDir)
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	etcdLog, err := os.OpenFile(filepath.Join(s.logs, "etcd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	apiLog, err := os.OpenFile(filepath.Join(s.logs, "kube-apiserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	s.plane = &localcluster.ControlPlane{
		BinDir:        s.o.BinDir,
		EtcdDataDir:   filepath.Join(s.state, "etcd"),
		CertDir:       certDir,
		EtcdPort:      s.o.EtcdPort,
		APIServerPort: s.o.APIServerPort,
		// Enough room for --nodes 1000 and its load: the sandbox is the
		// only client that matters here.
		APIServerArgs: append([]string{"--max-requests-inflight=800", "--max-mutating-requests-inflight=400",
			"--service-cluster-ip-range=" + s.serviceCIDRs()}, s.realNodeAPIServerArgs()...),
		EtcdLog:      etcdLog,
		APIServerLog: apiLog,
		StartTimeout: 3 * time.Minute,
		// With real nodes, kube-controller-manager creates each
		// namespace's default ServiceAccount, so pods can get a token
		// mounted, as a pod using the in-cluster config (the chart's)
		// needs. Without, no one would create them and every pod would be
		// refused.
		ServiceAccountAdmission: s.o.RealNodes > 0,
	}
	cfg, err := s.plane.Start(ctx)
	if err != nil {
		s.plane = nil
		return fmt.Errorf("sandbox: start etcd and kube-apiserver (logs in %s): %w", s.logs, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	s.restCfg = cfg
	if s.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("sandbox: client: %w", err)
	}
	if err := localcluster.WriteKubeconfig(cfg, filepath.Join(s.state, "kubeconfig")); err != nil {
		return err
	}
	return s.superviseControlPlane(ctx)
}

// startLocalcloud runs `stratus localcloud serve` as a child process.
func (s *sandbox) startLocalcloud(ctx context.Context) error {
	lcState := filepath.Join(s.state, "localcloud")
	args := []string{"localcloud", "serve",
		"--listen=" + net.JoinHostPort(s.localcloudHost(), strconv.Itoa(s.o.LocalcloudPort)),
		"--state-dir=" + lcState,
	}
	for flag, v := range map[string]string{"vip-pool": s.o.VIPPool, "internal-pool": s.o.InternalPool, "external-pool": s.o.ExternalPool} {
		if v != "" {
			args = append(args, "--"+flag+"="+v)
		}
	}
	if s.real != nil && s.real.LoadBalancerNetns() != "" {
		// Load balancers forward packets inside the slot's load-balancer
		// namespace: the real nodes' pods see the client's address.
		targets := s.real.Subnet().String()
		if p := s.real.VIPPool6(); p.IsValid() {
			targets += "," + s.real.Subnet6().String()
			args = append(args, "--vip6-pool="+p.String())
		}
		args = append(args, "--dataplane-netns="+s.real.LoadBalancerNetns(), "--dataplane=passthrough",
			"--dataplane-target-network="+targets)
	}
	// localcloud keeps its knobs in its state. Only the first start passes
	// knob flags: the fault flags given now, and for a new cloud quotas
	// sized from --nodes. A restart after a crash passes none, so it keeps
	// what `stratus localcloud config set` changed meanwhile; a resumed
	// sandbox keeps the saved quotas unless --nodes outgrew them (below).
	first := append(slices.Clone(args), s.o.knobArgs()...)
	if _, err := os.Stat(filepath.Join(lcState, "localcloud.db")); errors.Is(err, os.ErrNotExist) {
		q := s.quotasFor()
		first = append(first, "--quota-routes="+strconv.Itoa(q.RoutesPerCluster), "--quota-instances="+strconv.Itoa(q.Instances))
	}
	starts := 0
	if _, err := s.supervise(ctx, "localcloud", func() (*child, error) {
		starts++
		if starts == 1 {
			return startChild("localcloud", s.logs, s.self, first...)
		}
		return startChild("localcloud", s.logs, s.self, args...)
	}); err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := waitFor(waitCtx, 100*time.Millisecond, "localcloud /healthz", func(ctx context.Context) (bool, error) {
		if err := s.childrenAlive(); err != nil {
			return false, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.localcloudURL()+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	token, err := os.ReadFile(filepath.Join(s.state, "localcloud", "token"))
	if err != nil {
		return fmt.Errorf("sandbox: localcloud token: %w", err)
	}
	s.lcToken = strings.TrimSpace(string(token))
	if s.cloud, err = lcclient.New(s.localcloudURL(), s.lcToken, lcclient.WithMaxRetries(10)); err != nil {
		return fmt.Errorf("sandbox: localcloud client: %w", err)
	}
	// The knobs in force: the flags given now over what the state kept.
	k, err := s.cloud.Config(ctx)
	if err != nil {
		return fmt.Errorf("sandbox: localcloud config: %w", err)
	}
	if k, err = s.fitQuotas(ctx, k); err != nil {
		return err
	}
	s.knobs = *k
	return s.writeEnv()
}

// quotasFor are the instance and route quotas a new cloud gets: room for
// --nodes machines and their routes, and for more made by hand.
func (s *sandbox) quotasFor() lcapi.Quotas {
	return lcapi.Quotas{Instances: max(10000, s.o.Nodes*2), RoutesPerCluster: max(50, s.o.Nodes+10)}
}

// fitQuotas raises the saved instance and route quotas that are too small
// for --nodes (a sandbox resumed with more nodes than it had), saying so;
// quotas that fit, as set with `localcloud config set`, stay.
func (s *sandbox) fitQuotas(ctx context.Context, k *lcapi.Knobs) (*lcapi.Knobs, error) {
	want := s.quotasFor()
	var p lcapi.KnobsPatch
	var raised []string
	if k.Quotas.Instances < s.o.Nodes {
		p.Quotas = &lcapi.QuotasPatch{Instances: &want.Instances}
		raised = append(raised, fmt.Sprintf("quotas.instances %d -> %d", k.Quotas.Instances, want.Instances))
	}
	if k.Quotas.RoutesPerCluster < s.o.Nodes {
		if p.Quotas == nil {
			p.Quotas = &lcapi.QuotasPatch{}
		}
		p.Quotas.RoutesPerCluster = &want.RoutesPerCluster
		raised = append(raised, fmt.Sprintf("quotas.routesPerCluster %d -> %d", k.Quotas.RoutesPerCluster, want.RoutesPerCluster))
	}
	if p.Quotas == nil {
		return k, nil
	}
	k, err := s.cloud.UpdateConfig(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("sandbox: raise localcloud's quotas to fit --nodes=%d: %w", s.o.Nodes, err)
	}
	fmt.Fprintf(s.out, "            --nodes %d does not fit the saved quotas: raised %s\n", s.o.Nodes, strings.Join(raised, ", "))
	return k, nil
}
