// Command dataplane measures localcloud's load-balancer data planes on the
// sandbox's real nodes: requests per second and latency through a VIP
// that passes packets through, one that proxies connections, and one that
// proxies with a PROXY protocol header, against the floor, the same client
// on the machine hitting a node port directly. Every request is a new TCP
// connection (the demo closes after answering), so connection setup
// through the data plane is in every figure.
//
// It starts `stratus sandbox --nodes 0 --real-nodes N --no-demo` of its own
// (root, as real nodes need), runs the demo image on every real node
// behind three LoadBalancer Services, measures each target in turn, prints
// a Markdown table and stops the sandbox.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	app           = "dp-bench"
	realNodeLabel = "sandbox.stratus.dev/real-node"
	annotations   = "localcloud.stratus.io/"
)

type options struct {
	bin, state                     string
	nodes, conns, rounds, requests int
	duration, warmup, pause        time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "directory of stratus and the test bed (make tools)")
	flag.StringVar(&o.state, "state", "", "sandbox state directory (default: a temporary one, removed after)")
	flag.IntVar(&o.nodes, "nodes", 2, "real nodes")
	flag.IntVar(&o.conns, "conns", 8, "concurrent clients")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds; each measures every target in turn, and the table shows each figure's median")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "the longest a measurement runs (per target and round)")
	flag.IntVar(&o.requests, "requests", 10000, "requests per measurement (it ends at this count or after -duration); "+
		"at most about 28,000, the ports of one client address (see run)")
	flag.DurationVar(&o.pause, "pause", time.Minute, "pause before each measurement but the first (TIME_WAIT, see run)")
	flag.DurationVar(&o.warmup, "warmup", 0, "unmeasured time per target first")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dataplane:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.nodes < 1 || o.conns < 1 || o.rounds < 1 || o.requests < 1 || o.duration <= 0 || o.warmup < 0 || o.pause < 0 {
		return fmt.Errorf("-nodes %d, -conns %d, -rounds %d, -duration %v, -warmup %v, -pause %v: want at least 1, 1, 1, >0, >=0, >=0",
			o.nodes, o.conns, o.rounds, o.duration, o.warmup, o.pause)
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if o.state == "" {
		dir, err := os.MkdirTemp("", "dataplane-bench-")
		if err != nil {
			return err
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
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	targets, err := setUp(ctx, cs, o.nodes)
	if err != nil {
		return err
	}
	// Interleaved rounds: a drift of the machine's load during the run
	// touches every target alike. The pause before each measurement but
	// the first is for TCP: the demo closes first, so the pod keeps each
	// connection's addresses and ports in TIME_WAIT for a minute, and one
	// client address has about 28,000 ports. More new connections than
	// that between the same two addresses within a minute reuse a port
	// still in TIME_WAIT; such a SYN goes unanswered and the dial times
	// out: the benchmark's limit, not the data plane's (both proxies dial
	// the pods from the same address, so they share it). A measurement of
	// a few seconds stays under it; the pause lets the next start clean.
	runs := make([][]result, len(targets))
	first := true
	for round := range o.rounds {
		for i, tg := range targets {
			if !first && o.pause > 0 {
				fmt.Fprintf(os.Stderr, "pausing %v for TIME_WAIT to clear ...\n", o.pause)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(o.pause):
				}
			}
			first = false
			fmt.Fprintf(os.Stderr, "round %d: measuring %s (%s) for %v with %d clients ...\n", round+1, tg.name, tg.addr, o.duration, o.conns)
			if o.warmup > 0 {
				measure(ctx, tg, o.conns, o.warmup, o.requests) // not kept
			}
			runs[i] = append(runs[i], measure(ctx, tg, o.conns, o.duration, o.requests))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	results := make([]result, len(targets))
	for i, rs := range runs {
		results[i] = median(rs)
	}
	printTable(os.Stdout, results, o)
	return nil
}

// median is each figure's median over the rounds (requests and errors
// summed, the rate kept as the median round's).
func median(rs []result) result {
	out := rs[0]
	pick := func(get func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	out.rate = pick(func(r result) float64 { return r.rps() })
	out.p50 = time.Duration(pick(func(r result) float64 { return float64(r.p50) }))
	out.p99 = time.Duration(pick(func(r result) float64 { return float64(r.p99) }))
	out.requests, out.errors = 0, 0
	for _, r := range rs {
		out.requests += r.requests
		out.errors += r.errors
	}
	return out
}

type sandbox struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startSandbox runs the sandbox and waits for its ready marker.
func startSandbox(ctx context.Context, bin string, o options) (*sandbox, error) {
	log, err := os.Create(filepath.Join(filepath.Dir(o.state), "sandbox.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "stratus"), "sandbox", "--state-dir="+o.state, "--bin-dir="+bin,
		"--nodes=0", "--real-nodes="+strconv.Itoa(o.nodes), "--no-demo")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sb := &sandbox{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(sb.done) }()
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-sb.done:
			return false, fmt.Errorf("the sandbox exited before it was ready; see %s", log.Name())
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

// stop ends the sandbox with SIGTERM, which removes its real nodes.
func (s *sandbox) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// target is what the clients hit: a VIP, or a node port for the floor.
type target struct {
	name, addr string
	note       string
}

// setUp runs the demo on every real node behind three load balancers and
// returns the floor (a node port) and the three VIPs, once each answers.
func setUp(ctx context.Context, cs kubernetes.Interface, nodes int) ([]target, error) {
	labels := map[string]string{"app": app}
	replicas := int32(nodes)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{realNodeLabel: "true"},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
						WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
					Containers: []corev1.Container{{Name: "demo", Image: "stratus.local/demo:v1", ImagePullPolicy: corev1.PullNever,
						Args: []string{"-udp="}, Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}},
	}
	if _, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	modes := []struct{ name, note, key, value string }{
		{"pass-through", "nftables DNAT in the load-balancer namespace", "", ""},
		{"proxy", "ip-mode Proxy: connections from localcloud's proxy", annotations + "ip-mode", "Proxy"},
		{"PROXY protocol v2", "proxy-protocol v2: the proxy, with a header", annotations + "proxy-protocol", "v2"},
	}
	var out []target
	var nodePort int32
	for _, m := range modes {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "dp-" + strings.ToLower(strings.NewReplacer(" ", "-", "-", "").Replace(m.name)), Namespace: metav1.NamespaceDefault,
				Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: labels,
				Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		if m.key != "" {
			svc.Annotations[m.key] = m.value
		}
		created, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		if nodePort == 0 {
			nodePort = created.Spec.Ports[0].NodePort
		}
		vip, err := waitVIP(ctx, cs, svc.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, target{name: m.name, addr: net.JoinHostPort(vip, "80"), note: m.note})
	}
	n, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: realNodeLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("real nodes: %w", err)
	}
	if len(n.Items) == 0 {
		return nil, errors.New("the sandbox has no real node")
	}
	var nodeIP string
	for _, a := range n.Items[0].Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	floor := target{name: "floor: node port", addr: net.JoinHostPort(nodeIP, strconv.Itoa(int(nodePort))),
		note: "the same client straight to a node's node port (kube-proxy), no load balancer"}
	out = append([]target{floor}, out...)
	for _, tg := range out {
		if err := waitAnswer(ctx, tg.addr); err != nil {
			return nil, fmt.Errorf("%s (%s): %w", tg.name, tg.addr, err)
		}
	}
	return out, nil
}

func waitVIP(ctx context.Context, cs kubernetes.Interface, name string) (string, error) {
	var vip string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, nil
		}
		vip = s.Status.LoadBalancer.Ingress[0].IP
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("service %s: no ingress: %w", name, err)
	}
	return vip, nil
}

// waitAnswer waits until every pod behind addr has answered in a row.
func waitAnswer(ctx context.Context, addr string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for range 10 {
			if _, last = request(ctx, addr); last != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return errors.Join(err, last)
	}
	return nil
}

// request is one HTTP GET on a new connection; it returns the latency.
func request(ctx context.Context, addr string) (time.Duration, error) {
	start := time.Now()
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(start.Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.0\r\n\r\n"); err != nil {
		return 0, err
	}
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200") {
		return 0, fmt.Errorf("answer %q", status)
	}
	_, _ = io.Copy(io.Discard, c)
	return time.Since(start), nil
}

// errKind names an error by its last words, without addresses and ports,
// so that a run's errors count by cause.
func errKind(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

type result struct {
	target
	requests, errors int
	elapsed          time.Duration
	p50, p99         time.Duration
	// rate, when set, is the median over rounds.
	rate float64
}

func (r result) rps() float64 {
	if r.rate > 0 {
		return r.rate
	}
	return float64(r.requests) / r.elapsed.Seconds()
}

// measure runs conns clients against tg until n requests were sent or d
// passed.
func measure(ctx context.Context, tg target, conns int, d time.Duration, n int) result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	kinds := map[string]int{}
	var wg sync.WaitGroup
	start := time.Now()
	var sent atomic.Int64
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil && sent.Add(1) <= int64(n) {
				l, err := request(ctx, tg.addr)
				mu.Lock()
				if err != nil {
					if ctx.Err() == nil {
						errs++
						kinds[errKind(err)]++
					}
				} else {
					lat = append(lat, l)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(kinds) > 0 {
		fmt.Fprintf(os.Stderr, "  %s: %d errors: %v\n", tg.name, errs, kinds)
	}
	r := result{target: tg, requests: len(lat), errors: errs, elapsed: time.Since(start)}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)*50/100], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return r
}

func printTable(w io.Writer, rs []result, o options) {
	fmt.Fprintf(w, "%d real nodes, %d concurrent clients on the machine, %d round(s) of %d requests per target (after %v of warm-up each), %v apart, "+
		"the targets in turn in every round, each figure the median of the rounds; every request a new TCP connection (HTTP GET, the demo closes).\n\n",
		o.nodes, o.conns, o.rounds, o.requests, o.warmup, o.pause)
	fmt.Fprintln(w, "| target | requests/s | p50 (ms) | p99 (ms) | requests (all rounds) | errors | requests/s ÷ floor | p50 × floor | p99 × floor | what |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	floor := rs[0]
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) }
	ratio := func(a, b float64) string {
		if b == 0 {
			return "–"
		}
		return strconv.FormatFloat(a/b, 'f', 2, 64)
	}
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %d | %d | %s | %s | %s | %s |\n", r.name, r.rps(), ms(r.p50), ms(r.p99), r.requests, r.errors,
			ratio(r.rps(), floor.rps()), ratio(float64(r.p50), float64(floor.p50)), ratio(float64(r.p99), float64(floor.p99)), r.note)
	}
}
