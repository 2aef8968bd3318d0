package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	lcapi "github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/localcluster/realnode"
)

// sandbox is one run: what it started, in order, so it can stop them in
// reverse.
type sandbox struct {
	o     Options
	out   io.Writer
	self  string // the stratus binary
	state string // absolute state dir
	logs  string
	began time.Time
	procs []*supervised
	// stopping is closed when the sandbox begins to stop: supervisors
	// then stop restarting.
	stopping chan struct{}
	stopOnce sync.Once
	// failed is closed, with fatal set, when a child keeps failing.
	failed   chan struct{}
	failOnce sync.Once
	fatal    error
	// backoff is the first restart delay of a supervised child.
	backoff time.Duration
	plane   *localcluster.ControlPlane
	// real holds the real nodes (--real-nodes), nil without.
	real *realnode.Cluster
	// dual: the cluster is dual-stack (dualstack.go).
	dual    bool
	kube    kubernetes.Interface
	restCfg *rest.Config
	cloud   *lcclient.Client
	lcToken string
	knobs   lcapi.Knobs // localcloud's settings at start
	lock    *os.File
	// demoVIPs are the demo load balancer's addresses, one per family.
	demoVIPs []string
	// ccmFlags are the controller manager's flags, also in the env file.
	ccmFlags []string
	// nodeSockets are the real nodes' containerd sockets, in the env
	// file once the chart's values are written (--no-ccm).
	nodeSockets []string
	// metricsToken reads the controller manager's /metrics.
	metricsToken string
	envMu        sync.Mutex
}

// Run brings the sandbox up, reports progress to out, and keeps it running
// until ctx ends; then it stops every process it started (the apiserver
// before etcd) and returns. Any failure on the way up stops what was
// already started and returns an error saying what went wrong.
func Run(ctx context.Context, o Options, out io.Writer) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("sandbox: locate the stratus binary: %w", err)
	}
	s := &sandbox{o: o, out: out, self: self, began: time.Now(),
		stopping: make(chan struct{}), failed: make(chan struct{}), backoff: restartBackoff}
	if s.o.BinDir == "" {
		s.o.BinDir = filepath.Dir(self)
	}
	if s.o.RealNodes == AutoRealNodes {
		n, why := autoRealNodes(machineRealNodeEnv(s.o.BinDir))
		if why != "" {
			fmt.Fprintf(out, "no real nodes: %s; kwok nodes only (--real-nodes=0 says so quietly)\n", why)
		}
		s.o.RealNodes = n
	}
	s.dual = s.o.dualStack()
	if s.o.IPFamily == IPFamilyDual && !s.dual {
		return errors.New("sandbox: --ip-family=dual: no real nodes to run it on")
	}
	// Stopping outlives ctx (it ends first) but keeps its logger.
	defer s.shutdown(context.WithoutCancel(ctx))
	// Whatever ends the run (Ctrl-C, a child that keeps failing, a failed
	// step), the sandbox's own watches and loops end first, so the API
	// server they talk to stops at once rather than after its grace period.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	for _, st := range s.plan() {
		if err := s.step(ctx, st.what, st.fn); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(s.state, "ready"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600); err != nil {
		return fmt.Errorf("sandbox: write ready marker: %w", err)
	}
	s.printInstructions()
	return s.watch(ctx)
}

// stage is one step of bringing the sandbox up, as reported to the user.
type stage struct {
	what string
	fn   func(context.Context) error
}

// plan lists the steps Run takes, in order, for the sandbox's options.
func (s *sandbox) plan() []stage {
	o := s.o
	steps := []stage{
		{"checking the state dir, binaries and ports", s.preflight},
		{"starting etcd and kube-apiserver", s.startControlPlane},
	}
	if o.RealNodes > 0 {
		steps = append(steps, stage{"taking a real-node slot: its bridge, subnet and VIP pool", s.takeRealSlot})
	}
	steps = append(steps, []stage{
		{"starting localcloud", s.startLocalcloud},
		{"creating the metrics reader's token", s.startMetricsReader},
		{"applying the chart's RBAC; the controller manager runs as its ServiceAccount", s.installRBAC},
	}...)
	if o.RealNodes > 0 {
		steps = append(steps, stage{fmt.Sprintf("starting kube-controller-manager, kube-scheduler and %d real nodes (kubelet, containerd, kube-proxy)", o.RealNodes), s.startRealNodes})
	}
	steps = append(steps, []stage{
		{fmt.Sprintf("creating %d instances in %d zones", o.Nodes, o.Zones), s.ensureInstances},
		{"registering the nodes of running instances (kwok sends their heartbeats)", s.startNodes},
		{"starting the node-port responder", s.startResponder},
	}...)
	if o.NoCCM {
		steps = append(steps, stage{"writing the controller manager's flags to the env file (--no-ccm: run your own)", s.startCCM})
		if o.RealNodes > 0 {
			steps = append(steps, stage{"writing the chart's values for helm install on the real nodes to " + ChartValuesFile, s.writeChartValues})
		}
	} else {
		steps = append(steps, []stage{
			{"starting stratus controller-manager", s.startCCM},
			{"waiting for the nodes to be initialized", s.waitNodes},
		}...)
	}
	if o.RealNodes > 0 {
		steps = append(steps, stage{"starting the cluster DNS (CoreDNS as kube-system/kube-dns) on a real node", s.startClusterDNS})
	}
	if !o.NoDemo {
		steps = append(steps, stage{"creating the demo Services hello and hello-local (externalTrafficPolicy Local) and waiting for their load balancers", s.demo})
		if o.RealNodes > 0 {
			steps = append(steps, stage{"creating the demo Deployment and Service hello-real (and, with real nodes only, hello-direct, whose load balancer targets the pods) on the real nodes and waiting for their load balancers", s.demoReal})
		}
	}
	return steps
}

func (s *sandbox) step(ctx context.Context, what string, fn func(context.Context) error) error {
	fmt.Fprintf(s.out, "[%6.1fs] %s ...\n", time.Since(s.began).Seconds(), what)
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sandbox: interrupted before %s", what)
	}
	if err := fn(ctx); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "[%6.1fs]   done in %.1fs\n", time.Since(s.began).Seconds(), time.Since(start).Seconds())
	return nil
}

// watch keeps the sandbox up until ctx ends or a child keeps failing
// (children that exit now and then are restarted by their supervisors).
func (s *sandbox) watch(ctx context.Context) error {
	select {
	case <-ctx.Done():
		fmt.Fprintf(s.out, "stopping the sandbox ...\n")
		return nil
	case <-s.failed:
		return s.fatal
	}
}

// shutdown stops everything in reverse start order: the CCM, kwok and
// localcloud first, then kube-apiserver, then etcd.
func (s *sandbox) shutdown(ctx context.Context) {
	if s.state != "" {
		_ = os.Remove(filepath.Join(s.state, "ready"))
	}
	s.stopOnce.Do(func() { close(s.stopping) })
	// The real nodes first: their kubelets would only complain once the
	// API server is gone. Their Stop checks that nothing of them is left.
	if s.real != nil {
		if err := s.real.Stop(ctx); err != nil {
			fmt.Fprintf(s.out, "stopping the real nodes: %v\n", err)
		}
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop(15 * time.Second)
	}
	if s.plane != nil {
		s.plane.Stop()
	}
	s.stopStrays()
	if s.lock != nil {
		_ = syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
		_ = s.lock.Close()
	}
}

func (s *sandbox) printInstructions() {
	fmt.Fprintf(s.out, `
Stratus sandbox is ready (%.1fs). In another terminal:

  source %s            # or: export KUBECONFIG=%s
  kubectl get nodes -o wide
  kubectl get svc hello hello-local
`, time.Since(s.began).Seconds(), filepath.Join(s.state, "env"), filepath.Join(s.state, "kubeconfig"))
	for _, vip := range s.demoVIPs {
		fmt.Fprintf(s.out, "  curl -g http://%s/            # through localcloud's load balancer to a node\n", net.JoinHostPort(vip, "80"))
	}
	fmt.Fprintf(s.out, "  %s   # the controller manager's metrics\n", MetricsCurl)
	if s.o.NoCCM {
		fmt.Fprintf(s.out, "  %s controller-manager $STRATUS_CCM_FLAGS   # --no-ccm: your controller manager\n", s.self)
		if len(s.nodeSockets) > 0 {
			fmt.Fprintf(s.out, `  # or the chart, as pods on the real nodes (docs/sandbox.md): make image, then
  for s in $STRATUS_REAL_NODE_SOCKETS; do "$STRATUS_CTR" --address "$s" -n k8s.io images import --platform linux/%s bin/image/stratus-linux-%s.tar; done
  bin/helm install %s charts/stratus -n kube-system --values "$STRATUS_CHART_VALUES"
`, runtime.GOARCH, runtime.GOARCH, helmRelease)
		}
	}
	fmt.Fprintf(s.out, `  %s localcloud lbs list
  %s localcloud instances list

Logs: %s
Press Ctrl-C to stop; run again with the same --state-dir to resume.
`, s.self, s.self, s.logs)
}

func (s *sandbox) writeEnv() error {
	s.envMu.Lock()
	defer s.envMu.Unlock()
	content := ""
	if s.self != "" {
		// `stratus localcloud ...` and `stratus controller-manager` as the
		// docs write them: this stratus binary first on the PATH.
		content += "export PATH=" + strings.TrimSuffix(strconv.Quote(filepath.Dir(s.self)+":"), `"`) + `$PATH"` + "\n"
	}
	content += "export KUBECONFIG=" + strconv.Quote(filepath.Join(s.state, "kubeconfig")) + "\n" +
		"export LOCALCLOUD_URL=" + strconv.Quote(s.localcloudURL()) + "\n" +
		"export LOCALCLOUD_TOKEN=" + strconv.Quote(s.lcToken) + "\n" +
		// The localcloud commands default to the sandbox's cluster, region
		// and zone: `instances create` makes a machine that gets a node,
		// `routes list` shows the sandbox's routes.
		"export LOCALCLOUD_CLUSTER=" + strconv.Quote(clusterName) + "\n" +
		"export LOCALCLOUD_REGION=" + strconv.Quote(region) + "\n" +
		"export LOCALCLOUD_ZONE=" + strconv.Quote(zoneName(0, s.o.Zones)) + "\n"
	if s.metricsToken != "" {
		content += "export STRATUS_METRICS_TOKEN=" + strconv.Quote(s.metricsToken) + "\n" +
			"export STRATUS_METRICS_URL=" + strconv.Quote(s.ccmURL()+"/metrics") + "\n" +
			"export STRATUS_CCM_URL=" + strconv.Quote(s.ccmURL()) + "\n" +
			"# the controller manager's metrics (and $STRATUS_CCM_URL/healthz, /readyz):\n" +
			"# " + MetricsCurl + "\n"
	}
	if len(s.ccmFlags) > 0 {
		// Run your own build against the sandbox (with --no-ccm, or after
		// stopping the sandbox's): stratus controller-manager $STRATUS_CCM_FLAGS
		content += "export STRATUS_CCM_FLAGS=" + strconv.Quote(strings.Join(s.ccmFlags, " ")) + "\n"
	}
	content += s.chartEnv()
	if err := os.WriteFile(filepath.Join(s.state, "env"), []byte(content), 0o600); err != nil {
		return fmt.Errorf("sandbox: write env file: %w", err)
	}
	return nil
}

func (s *sandbox) localcloudURL() string {
	return "http://" + net.JoinHostPort(s.localcloudHost(), strconv.Itoa(s.o.LocalcloudPort))
}

// localcloudHost is where localcloud's API listens: loopback, or with
// real nodes the machine's address on their bridge, which the machine
// and a process in a node's namespace (a Stratus pod) both reach, while
// the machine's loopback is not the node's.
func (s *sandbox) localcloudHost() string {
	if s.real != nil {
		return s.real.Subnet().Addr().Next().String()
	}
	return "127.0.0.1"
}

// errMissingBinary is wrapped when a binary of the test bed is missing.
var errMissingBinary = errors.New("missing binary")
