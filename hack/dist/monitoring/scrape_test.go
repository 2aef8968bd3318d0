package monitoring_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stratus-ccm/stratus/hack/dist/monitoring"
)

// stratusBin is the binary `make build` writes (make test builds it first).
const stratusBin = "../../../bin/stratus"

// TestMetricsAreExported: every metric the dashboard and the rules read
// is one a running Stratus exports. The sandbox brings up etcd,
// kube-apiserver, localcloud (rate limited, so that the cloud throttles)
// and nodes, without a controller manager; the test starts the daemon,
// `stratus controller-manager`, with the sandbox's flags, waits until it
// has initialized nodes, made load balancers and been throttled, then
// compares its /metrics with what the queries read.
func TestMetricsAreExported(t *testing.T) {
	bin, err := filepath.Abs(stratusBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run make build (make test does)", err)
	}
	used := usedMetrics(t)
	state := t.TempDir()
	startSandbox(t, bin, state)
	env := readEnv(t, filepath.Join(state, "env"))
	daemon := start(t, filepath.Join(state, "ccm.log"), bin, append([]string{"controller-manager"}, strings.Fields(env["STRATUS_CCM_FLAGS"])...)...)

	ccmLog := filepath.Join(state, "ccm.log")
	waitMetrics(t, env, daemon, ccmLog, worked)
	// A machine joins: once its node is initialized, Stratus updates the
	// load balancers' node sets, which the node-sync panels show.
	create := exec.Command(bin, "localcloud", "instances", "create", "node-0099")
	create.Env = os.Environ()
	for k, v := range env {
		create.Env = append(create.Env, k+"="+v)
	}
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("stratus localcloud instances create: %v\n%s", err, out)
	}
	exposed := waitMetrics(t, env, daemon, ccmLog, func(fams map[string]*dto.MetricFamily) error {
		return has(fams, "stratus_service_load_balancer_updates_total", "result", "success")
	})
	var missing []string
	for name, where := range used {
		if !exposed[name] {
			missing = append(missing, fmt.Sprintf("%s (%s)", name, where))
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("queries read metrics a running Stratus does not export:\n%s", strings.Join(missing, "\n"))
	}
	t.Logf("%d metric names read by the dashboard and the rules, all among the %d samples names Stratus exports", len(used), len(exposed))
}

// waitMetrics scrapes the daemon until ready accepts what it exports, and
// returns the exported sample names.
func waitMetrics(t *testing.T, env map[string]string, daemon <-chan struct{}, log string,
	ready func(map[string]*dto.MetricFamily) error) map[string]bool {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		fams, raw, err := scrape(env["STRATUS_METRICS_URL"], env["STRATUS_METRICS_TOKEN"])
		var exposed map[string]bool
		if err == nil {
			exposed, err = monitoring.ExposedNames(bytes.NewReader(raw))
		}
		if err == nil {
			err = ready(fams)
		}
		if err == nil {
			return exposed
		}
		if exited(daemon) || time.Now().After(deadline) {
			t.Fatalf("the controller manager did not get there: %v; its log: %s", err, tail(log))
		}
		time.Sleep(2 * time.Second)
	}
}

// worked says why the scrape does not yet show a Stratus that did the
// work the dashboard shows: nodes initialized, a load balancer made, a
// throttled answer (until then the labelled families are not exported).
func worked(fams map[string]*dto.MetricFamily) error {
	for _, w := range []struct{ family, label, value string }{
		{"stratus_leader_is_leading", "", ""},
		{"stratus_node_initializations_total", "result", "success"},
		{"stratus_service_syncs_total", "result", "success"},
		{"stratus_cloud_requests_total", "operation", "EnsureLoadBalancer"},
		{"stratus_cloud_throttled_total", "", ""},
	} {
		if err := has(fams, w.family, w.label, w.value); err != nil {
			return err
		}
	}
	return nil
}

// has says why fams holds no series of family above 0 (with label=value
// if label is set), or nil.
func has(fams map[string]*dto.MetricFamily, family, label, value string) error {
	f, ok := fams[family]
	if !ok {
		return fmt.Errorf("no %s yet", family)
	}
	if !slices.ContainsFunc(f.GetMetric(), func(m *dto.Metric) bool {
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		return v > 0 && (label == "" || slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == label && l.GetValue() == value
		}))
	}) {
		return fmt.Errorf("no %s{%s=%q} above 0 yet", family, label, value)
	}
	return nil
}

func scrape(url, token string) (map[string]*dto.MetricFamily, []byte, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// The daemon's self-signed serving certificate, on loopback.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, raw)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	return fams, raw, err
}

// startSandbox runs `stratus sandbox --no-ccm` on free ports and address
// pools of its own, and waits for its ready marker.
func startSandbox(t *testing.T, bin, state string) {
	t.Helper()
	args := []string{"sandbox", "--real-nodes=0", "--no-ccm", "--state-dir", state, "--bin-dir", filepath.Dir(bin),
		"--nodes", "2", "--zones", "1", "--rate-limit", "1", "--rate-burst", "1",
		"--vip-pool", "127.0.213.0/24", "--internal-pool", "127.213.0.0/16", "--external-pool", "127.214.0.0/16",
		"--ready-timeout", "4m"}
	for _, flag := range []string{"--apiserver-port", "--etcd-port", "--localcloud-port", "--ccm-port"} {
		args = append(args, flag, strconv.Itoa(freePort(t)))
	}
	sb := start(t, filepath.Join(state, "..", "sandbox.log"), bin, args...)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(state, "ready")); err == nil {
			return
		}
		if exited(sb) || time.Now().After(deadline) {
			t.Fatalf("the sandbox did not get ready; its output: %s", tail(filepath.Join(state, "..", "sandbox.log")))
		}
		time.Sleep(time.Second)
	}
}

// start runs bin with its output in logFile, in a process group of its
// own, and stops it at the end of the test: SIGTERM (the sandbox then
// stops its children), SIGKILL to the group after 30 seconds. The channel
// closes when the process ends.
func start(t *testing.T, logFile, bin string, args ...string) <-chan struct{} {
	t.Helper()
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		_ = out.Close()
	})
	return done
}

// exited says whether a process start started has ended.
func exited(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// readEnv reads the sandbox's env file: lines `export NAME="value"`.
func readEnv(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if v, err := strconv.Unquote(value); err == nil {
			value = v
		}
		env[name] = value
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"STRATUS_CCM_FLAGS", "STRATUS_METRICS_URL", "STRATUS_METRICS_TOKEN"} {
		if env[name] == "" {
			t.Fatalf("%s holds no %s", file, name)
		}
	}
	return env
}

// tail is the end of a log, for a failure message.
func tail(file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return "\n" + string(data)
}
