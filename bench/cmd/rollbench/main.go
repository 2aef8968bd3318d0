// Command rollbench measures rolling updates of a Deployment behind a
// load balancer on the sandbox's real nodes, with node targets and with
// endpoint targets side by side: requests lost, cloud calls per rolling
// update and per second of churn, and the time from a new pod's readiness
// to the first request through the VIP that it answers.
//
// It starts `stratus sandbox --nodes 0 --real-nodes 2 --no-demo` of its
// own (root, as real nodes need) on free ports, runs one Deployment of the
// demo image per kind of target, each behind its own LoadBalancer Service,
// and rolls them one after the other while a client on the machine sends
// requests to the rolled Deployment's VIP; the other Deployment stands
// still, so localcloud's request counters, which count by operation and
// not by load balancer, are the rolled one's. The method is the e2e
// rolling-update specs' ("should not have connectivity disruption during
// rolling update"): requests at a steady rate, each on a new connection,
// a failure being any error or bad answer, and pods that keep serving for
// a while after they are told to stop (a preStop sleep here, the demo
// exiting at once on SIGTERM).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

type options struct {
	bin, state                   string
	nodes, replicas, rollouts    int
	rate                         float64
	drain, tail                  time.Duration
	nodeTargets, endpointTargets bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "directory of stratus and the test bed (make tools)")
	flag.StringVar(&o.state, "state", "", "sandbox state directory (default: a temporary one, removed after)")
	flag.IntVar(&o.nodes, "nodes", 2, "real nodes")
	flag.IntVar(&o.replicas, "replicas", 6, "replicas of each Deployment")
	flag.IntVar(&o.rollouts, "rollouts", 3, "rolling updates of each Deployment")
	flag.Float64Var(&o.rate, "rate", 50, "client requests per second to the VIP during a rolling update")
	flag.DurationVar(&o.drain, "drain", 15*time.Second, "preStop sleep: how long a pod told to stop keeps serving")
	flag.DurationVar(&o.tail, "tail", 3*time.Second, "measured time after the last old pod is gone, for late cloud calls")
	flag.BoolVar(&o.nodeTargets, "node-targets", true, "measure the load balancer with node targets")
	flag.BoolVar(&o.endpointTargets, "endpoint-targets", true, "measure the load balancer with endpoint targets")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rollbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, args []string) error {
	if o.nodes < 1 || o.replicas < 1 || o.rollouts < 1 || o.rate <= 0 || o.drain < 0 || o.tail < 0 {
		return fmt.Errorf("-nodes %d, -replicas %d, -rollouts %d, -rate %v, -drain %v, -tail %v: want at least 1, 1, 1, >0, >=0, >=0",
			o.nodes, o.replicas, o.rollouts, o.rate, o.drain, o.tail)
	}
	var modes []mode
	if o.nodeTargets {
		modes = append(modes, nodeTargets)
	}
	if o.endpointTargets {
		modes = append(modes, endpointTargets)
	}
	if len(modes) == 0 {
		return errors.New("-node-targets=false and -endpoint-targets=false: nothing to measure")
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return fmt.Errorf("-bin: %w", err)
	}
	if o.state == "" {
		dir, err := os.MkdirTemp("", "rollbench-")
		if err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		o.state = filepath.Join(dir, "state")
	}
	sb, err := startSandbox(ctx, bin, o)
	if err != nil {
		return err
	}
	defer sb.stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(o.state, "kubeconfig"))
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	cloud, err := cloudClient(filepath.Join(o.state, "env"))
	if err != nil {
		return err
	}
	b := &bench{cs: cs, cloud: cloud, o: o}
	results, err := b.measure(ctx, modes)
	if err != nil {
		return err
	}
	printTable(os.Stdout, results, o, args)
	return nil
}

type sandbox struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startSandbox runs the sandbox on free ports (another engineer's sandbox
// may hold the defaults) and waits for its ready marker.
func startSandbox(ctx context.Context, bin string, o options) (*sandbox, error) {
	if err := os.MkdirAll(filepath.Dir(o.state), 0o750); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	log, err := os.Create(filepath.Join(filepath.Dir(o.state), "sandbox.log"))
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer func() { _ = log.Close() }()
	args := []string{"sandbox", "--state-dir=" + o.state, "--bin-dir=" + bin,
		"--nodes=0", "--real-nodes=" + strconv.Itoa(o.nodes), "--no-demo"}
	for _, f := range []string{"apiserver-port", "etcd-port", "localcloud-port", "ccm-port"} {
		p, err := harness.FreePort()
		if err != nil {
			return nil, err
		}
		args = append(args, "--"+f+"="+strconv.Itoa(p))
	}
	cmd := exec.Command(filepath.Join(bin, "stratus"), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	fmt.Fprintf(os.Stderr, "sandbox pid %d, state %s, log %s\n", cmd.Process.Pid, o.state, log.Name())
	sb := &sandbox{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(sb.done) }()
	err = harness.Poll(ctx, 500*time.Millisecond, 10*time.Minute, "the sandbox", func(context.Context) (bool, error) {
		select {
		case <-sb.done:
			return false, fmt.Errorf("it exited before it was ready; see %s", log.Name())
		default:
		}
		_, err := os.Stat(filepath.Join(o.state, "ready"))
		return err == nil, nil
	})
	if err != nil {
		sb.stop()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return sb, nil
}

// stop ends the sandbox with SIGTERM, which removes its real nodes; a
// sandbox that will not stop is killed, by its PID only.
func (s *sandbox) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// cloudClient is a localcloud client from the sandbox's env file, for
// its request counters.
func cloudClient(envFile string) (*lcclient.Client, error) {
	f, err := os.Open(envFile)
	if err != nil {
		return nil, fmt.Errorf("localcloud: %w", err)
	}
	defer func() { _ = f.Close() }()
	env, err := parseEnv(f)
	if err != nil {
		return nil, fmt.Errorf("localcloud: %s: %w", envFile, err)
	}
	c, err := lcclient.New(env["LOCALCLOUD_URL"], env["LOCALCLOUD_TOKEN"])
	if err != nil {
		return nil, fmt.Errorf("localcloud: %w", err)
	}
	return c, nil
}

// parseEnv reads the env file's `export KEY="value"` lines (values
// quoted as Go quotes them); comments and other lines are skipped.
func parseEnv(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "export ")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return out, nil
}
