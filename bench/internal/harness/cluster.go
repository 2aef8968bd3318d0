package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stratus-ccm/stratus/bench/internal/config"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// CloudKnobs configure localcloud for a run.
type CloudKnobs struct {
	Latency   time.Duration
	RateLimit float64
	RateBurst int
	// ClientQPS and ClientBurst go into the provider config every
	// contestant shares (rateLimitQPS, rateLimitBurst): the provider paces
	// its HTTP requests to the cloud's limit, as cloud SDKs do. Zero
	// leaves the provider unpaced.
	ClientQPS   float64
	ClientBurst int
	// VIPPool is localcloud's --vip-pool; clusters that run side by side
	// need disjoint pools, since their load balancers bind real sockets.
	// Empty: the cluster claims a free one (ClaimVIPPool), searching from
	// the VIPPoolFrom-th.
	VIPPool     string
	VIPPoolFrom int
}

// Cluster is a fresh control plane, kwok and localcloud for one run.
type Cluster struct {
	BinDir     string
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	Kube       kubernetes.Interface
	// Cloud is the runner's localcloud client; its requests are counted
	// by CloudCounter so that they can be subtracted from the stats.
	Cloud        *lcclient.Client
	CloudCounter *CountingTransport
	CloudURL     string
	CloudConfig  string // provider --cloud-config file

	plane      *localcluster.ControlPlane
	kwok       *localcluster.Kwok
	localcloud *Proc
	vipClaim   io.Closer
	logs       []io.Closer
}

// ServiceCIDR is the cluster's Service range: a /16 holds 65,534
// ClusterIPs, far more than any run's Services.
const ServiceCIDR = "10.96.0.0/16"

// ClusterName is the --cluster-name of every contestant.
const ClusterName = "bench"

// StartCluster starts etcd, kube-apiserver, kwok and localcloud under dir.
func StartCluster(ctx context.Context, binDir, dir string, knobs CloudKnobs) (c *Cluster, err error) {
	// The failure paths return a nil *Cluster: stop through this one, so
	// what did start is stopped.
	started := &Cluster{BinDir: binDir, Dir: dir}
	c = started
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil { //nolint:gosec // dir is the run's scratch directory, chosen by the runner or its test
		return nil, fmt.Errorf("harness: %w", err)
	}
	if err := c.startControlPlane(ctx); err != nil {
		return nil, err
	}
	if err := c.startKwok(ctx); err != nil {
		return nil, err
	}
	if err := c.startLocalcloud(ctx, knobs); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) logFile(name string) string { return filepath.Join(c.Dir, "logs", name+".log") }

func (c *Cluster) startControlPlane(ctx context.Context) error {
	apiLog, err := os.Create(c.logFile("kube-apiserver"))
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	etcdLog, err := os.Create(c.logFile("etcd"))
	if err != nil {
		_ = apiLog.Close()
		return fmt.Errorf("harness: %w", err)
	}
	c.logs = append(c.logs, apiLog, etcdLog)
	// localcluster's processes get SIGKILL when the runner dies, however it
	// dies, so a crashed or killed run leaves no cluster behind.
	c.plane = &localcluster.ControlPlane{
		BinDir: c.BinDir, EtcdDataDir: filepath.Join(c.Dir, "etcd"), CertDir: filepath.Join(c.Dir, "pki"),
		EtcdLog: etcdLog, APIServerLog: apiLog, StartTimeout: 3 * time.Minute,
		// Room for thousands of nodes and Services: the default service
		// range (/24) holds only 254 ClusterIPs.
		APIServerArgs: []string{
			"--max-requests-inflight=1000",
			"--max-mutating-requests-inflight=500",
			"--service-cluster-ip-range=" + ServiceCIDR,
		},
	}
	cfg, err := c.plane.Start(ctx)
	if err != nil {
		c.plane = nil
		return fmt.Errorf("harness: start etcd and kube-apiserver (logs in %s): %w", filepath.Dir(c.logFile("x")), err)
	}
	// The runner creates thousands of objects as fast as the API server
	// takes them; its client must not be the bottleneck.
	cfg.QPS, cfg.Burst = 2000, 4000
	c.Config = cfg
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("harness: client: %w", err)
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, c.Kubeconfig); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}

// KwokLeaseSeconds is the node Leases' duration in the benchmark's
// clusters. kwok renews a Lease every quarter of its duration, as a kubelet
// does: with the test bed's 40 s, 10,000 nodes would send 1,000 Lease
// updates a second, more than this 2-core machine's kube-apiserver and etcd
// serve beside the contestants, and neither contestant reads node Leases.
// An hour's lease renews every 15 minutes: about 11 updates a second at
// 10,000 nodes, 1 at 1,000.
const KwokLeaseSeconds = 3600

// startKwok runs kwok with the test bed's stages and flags, so that the
// benchmark's fake kubelets behave as the tests' do, but for the Lease
// duration (KwokLeaseSeconds).
func (c *Cluster) startKwok(ctx context.Context) error {
	k, err := localcluster.StartKwok(ctx, filepath.Join(c.BinDir, "kwok"), c.Kubeconfig, c.Dir, c.logFile("kwok"),
		"--node-lease-duration-seconds="+strconv.Itoa(KwokLeaseSeconds))
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	c.kwok = k
	return nil
}

func (c *Cluster) startLocalcloud(ctx context.Context, k CloudKnobs) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	stateDir := filepath.Join(c.Dir, "localcloud")
	c.CloudURL = "http://127.0.0.1:" + strconv.Itoa(port)
	burst := k.RateBurst
	if burst <= 0 {
		burst = 10
	}
	vipPool := k.VIPPool
	if vipPool == "" {
		// The default VIP pool is a /24: too small for hundreds of
		// Services, and shared with the sandbox.
		if vipPool, c.vipClaim, err = ClaimVIPPool(k.VIPPoolFrom); err != nil {
			return err
		}
	}
	p, err := StartProc("localcloud", c.logFile("localcloud"), filepath.Join(c.BinDir, "stratus"),
		"localcloud", "serve",
		"--listen=127.0.0.1:"+strconv.Itoa(port),
		"--state-dir="+stateDir,
		"--latency="+k.Latency.String(),
		"--rate-limit="+strconv.FormatFloat(k.RateLimit, 'f', -1, 64),
		"--rate-burst="+strconv.Itoa(burst),
		"--quota-instances="+strconv.Itoa(config.MaxInstances),
		"--quota-lbs="+strconv.Itoa(config.MaxLoadBalancers),
		"--vip-pool="+vipPool)
	if err != nil {
		return err
	}
	c.localcloud = p
	if err := Poll(ctx, 100*time.Millisecond, time.Minute, "localcloud /healthz", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("localcloud exited (see %s)", p.Log)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.CloudURL+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		return err
	}
	token, err := os.ReadFile(filepath.Join(stateDir, "token"))
	if err != nil {
		return fmt.Errorf("harness: localcloud token: %w", err)
	}
	c.CloudCounter = NewCountingTransport(http.DefaultTransport)
	c.Cloud, err = lcclient.New(c.CloudURL, strings.TrimSpace(string(token)),
		lcclient.WithMaxRetries(20), lcclient.WithHTTPClient(&http.Client{Transport: c.CloudCounter, Timeout: time.Minute}))
	if err != nil {
		return fmt.Errorf("harness: localcloud client: %w", err)
	}
	c.CloudConfig = filepath.Join(c.Dir, "cloud.conf")
	if err := os.WriteFile(c.CloudConfig, []byte(ProviderConfig(c.CloudURL, filepath.Join(stateDir, "token"), k)), 0o600); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}

// Stop stops everything the cluster started, in reverse order.
func (c *Cluster) Stop() {
	if c.localcloud != nil {
		c.localcloud.Stop(10 * time.Second)
	}
	if c.vipClaim != nil {
		_ = c.vipClaim.Close()
	}
	if c.kwok != nil {
		c.kwok.Stop()
	}
	if c.plane != nil {
		c.plane.Stop()
	}
	for _, l := range c.logs {
		_ = l.Close()
	}
}

// ProviderConfig is the localcloud provider's --cloud-config, the same
// file for every contestant. The client-side pacing keys are written only
// when the knobs ask for them.
func ProviderConfig(url, tokenFile string, k CloudKnobs) string {
	cfg := "url: " + url + "\ntokenFile: " + tokenFile + "\nclusterName: " + ClusterName + "\n"
	if k.ClientQPS > 0 {
		cfg += "rateLimitQPS: " + strconv.FormatFloat(k.ClientQPS, 'f', -1, 64) + "\n" +
			"rateLimitBurst: " + strconv.Itoa(max(1, k.ClientBurst)) + "\n"
	}
	return cfg
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("harness: free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Poll calls cond every interval until it returns true or an error, or
// timeout passes.
func Poll(ctx context.Context, interval, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// vipPoolClaimPort is the port ClaimVIPPool binds on a pool's last
// address, which localcloud never hands out.
const vipPoolClaimPort = 64999

// vipPools is how many VIP pools (each a /config.VIPPoolBits, a /20)
// 127.170.0.0/16 holds.
const vipPools = 1 << (config.VIPPoolBits - 16)

// ClaimVIPPool returns a /20 of 127.170.0.0/16 that no other cluster on
// this machine holds, trying the from-th first, and the claim to close
// when the cluster stops. Clusters of one run side by side, other
// engineers' runs and the tests all bind real sockets on their VIPs, so
// a pool is claimed with a listener on its last address, which the kernel
// keeps exclusive across processes. Each /20 holds thousands of Services.
func ClaimVIPPool(from int) (string, io.Closer, error) {
	for i := range vipPools {
		n := (from + i) % vipPools
		stride := 256 / vipPools
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{127, 170, byte(stride * n), 0}), config.VIPPoolBits)
		last := netip.AddrFrom4([4]byte{127, 170, byte(stride*(n+1) - 1), 255})
		ln, err := net.Listen("tcp", netip.AddrPortFrom(last, vipPoolClaimPort).String())
		if err == nil {
			return p.String(), ln, nil
		}
	}
	return "", nil, fmt.Errorf("harness: every VIP pool of 127.170.0.0/16 is held by another cluster (a claim is a listener on port %d of its last address)", vipPoolClaimPort)
}
