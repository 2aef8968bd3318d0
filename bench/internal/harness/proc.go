package harness

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process.
type Proc struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProc runs binary with args in its own process group, output to
// logFile. Pdeathsig ends it should the runner die.
func StartProc(name, logFile, binary string, args ...string) (*Proc, error) {
	out, err := os.Create(logFile)
	if err != nil {
		return nil, fmt.Errorf("harness: %s log: %w", name, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("harness: start %s (%s): %w", name, binary, err)
	}
	p := &Proc{Name: name, Log: logFile, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL to the process group and waits for the end.
func (p *Proc) Kill() {
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM, then SIGKILL to the group after grace.
func (p *Proc) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// ExitError says why the process ended.
func (p *Proc) ExitError() error {
	if p.err == nil {
		return errors.New("exit status 0")
	}
	return p.err
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// CPUSeconds returns the process' user+system time, its waited-for
// children's included, from /proc/PID/stat.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("harness: cpu of %d: %w", pid, err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU sums utime, stime, cutime and cstime (fields 14-17). The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("harness: malformed /proc stat")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime is field 14.
	if len(f) < 15 {
		return 0, errors.New("harness: short /proc stat")
	}
	var ticks int64
	for _, s := range f[11:15] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("harness: /proc stat: %w", err)
		}
		ticks += v
	}
	return float64(ticks) / clockTicks, nil
}

// RSSMiB returns VmRSS, the resident set now, in MiB.
func RSSMiB(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("harness: status of %d: %w", pid, err)
	}
	return parseStatusKB(string(b), "VmRSS")
}

// PeakRSSMiB returns VmHWM, the resident set's high-water mark, in MiB.
func PeakRSSMiB(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("harness: status of %d: %w", pid, err)
	}
	return parseStatusKB(string(b), "VmHWM")
}

func parseStatusKB(status, field string) (float64, error) {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 1 {
			break
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("harness: %s: %w", field, err)
		}
		return kb / 1024, nil
	}
	return 0, fmt.Errorf("harness: no %s in /proc status", field)
}

// CountingTransport counts the runner's own localcloud requests by
// operation, so they can be taken out of localcloud's counters.
type CountingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	ops  map[string]int64
}

// NewCountingTransport wraps next.
func NewCountingTransport(next http.RoundTripper) *CountingTransport {
	return &CountingTransport{next: next, ops: map[string]int64{}}
}

// RoundTrip implements http.RoundTripper.
func (t *CountingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if op := operationOf(r.Method, r.URL.Path); op != "" {
		t.mu.Lock()
		t.ops[op]++
		t.mu.Unlock()
	}
	return t.next.RoundTrip(r)
}

// Snapshot returns the counts so far.
func (t *CountingTransport) Snapshot() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int64, len(t.ops))
	for k, v := range t.ops {
		out[k] = v
	}
	return out
}

// operationOf names the counted localcloud operations the runner uses;
// admin calls are not counted by localcloud and return "".
func operationOf(method, path string) string {
	p := strings.TrimPrefix(path, "/v1")
	switch {
	case strings.HasPrefix(p, "/admin/"):
		return ""
	case p == "/loadbalancers" && method == http.MethodGet:
		return "ListLoadBalancers"
	case p == "/instances" && method == http.MethodGet:
		return "ListInstances"
	case p == "/instances:batchCreate":
		return "BatchCreateInstances"
	case p == "/instances" && method == http.MethodPost:
		return "CreateInstance"
	}
	return "Other"
}

// CheckBinaries returns an error naming the first of names missing from
// binDir and the make target that builds it.
func CheckBinaries(binDir string, names ...string) error {
	for _, b := range names {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("%s is missing from %s: run `make tools build` (`make bench` does both, and builds bin/upstream-ccm)", b, binDir)
		}
	}
	return nil
}

// MachineCPU is the machine's CPU time from /proc/stat's first line, in
// clock ticks: busy (user, nice, system, irq, softirq, steal) and in all
// (idle and iowait added).
type MachineCPU struct {
	Busy, Total int64
}

// ReadMachineCPU reads /proc/stat.
func ReadMachineCPU() (MachineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineCPU{}, fmt.Errorf("harness: machine cpu: %w", err)
	}
	return parseMachineCPU(string(b))
}

func parseMachineCPU(stat string) (MachineCPU, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return MachineCPU{}, fmt.Errorf("harness: /proc/stat: unexpected first line %.80q", line)
	}
	var m MachineCPU
	// user nice system idle iowait irq softirq steal (guest time is
	// already inside user and nice).
	for i, s := range f[1:9] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return MachineCPU{}, fmt.Errorf("harness: /proc/stat: %w", err)
		}
		m.Total += v
		if i != 3 && i != 4 {
			m.Busy += v
		}
	}
	return m, nil
}

// BusyShare is the share of the machine's CPU time that was busy between
// two readings, 0 to 1 (0 when no time passed).
func BusyShare(before, after MachineCPU) float64 {
	if after.Total <= before.Total {
		return 0
	}
	return float64(after.Busy-before.Busy) / float64(after.Total-before.Total)
}
