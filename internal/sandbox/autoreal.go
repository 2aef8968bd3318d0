package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/stratus-ccm/stratus/internal/sbin"
)

// AutoRealNodes is --real-nodes' default: as many real nodes as fit
// comfortably when the machine can run them, none (and one line saying
// why) when it cannot.
const AutoRealNodes = -1

const (
	// minAutoRealNodes is what a default sandbox runs when it can run
	// any: two, so that a load balancer has a node to leave out.
	minAutoRealNodes = 2
	// maxAutoRealNodes caps the default; --real-nodes asks for more.
	maxAutoRealNodes = 4
	// autoRealNodeMiB is the memory budgeted per default real node: four
	// times what one uses (about 200 MiB), so the default takes at most a
	// quarter of the memory available.
	autoRealNodeMiB = 800
)

// realNodeEnv is what the default number of real nodes depends on.
type realNodeEnv struct {
	euid        int
	binDir      string
	cpus        int
	memAvailMiB int // -1: unknown
	lookPath    func(string) (string, error)
}

func machineRealNodeEnv(binDir string) realNodeEnv {
	return realNodeEnv{euid: os.Geteuid(), binDir: binDir, cpus: runtime.NumCPU(), memAvailMiB: memAvailableMiB(),
		lookPath: sbin.LookPath}
}

// autoRealNodes returns how many real nodes a sandbox runs by default:
// one per CPU within a quarter of the available memory, at least two and
// at most maxAutoRealNodes; or zero and the reason, in a few words.
func autoRealNodes(env realNodeEnv) (int, string) {
	if env.euid != 0 {
		return 0, "they need root (network namespaces, cgroups)"
	}
	var missing []string
	for _, b := range []string{"kubelet", "kube-proxy", "kube-controller-manager", "kube-scheduler", "containerd",
		"containerd-shim-runc-v2", "ctr", "cni/bridge", "cni/host-local", "cni/loopback", "images/pause.tar", "images/demo.tar", "images/coredns.tar"} {
		if _, err := os.Stat(filepath.Join(env.binDir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return 0, fmt.Sprintf("%s missing in %s (make tools builds them)", strings.Join(missing, ", "), env.binDir)
	}
	for _, p := range []string{"runc", "ip", "nsenter", "nft", "iptables"} {
		if _, err := env.lookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return 0, fmt.Sprintf("%s not installed (hack/install-deps.sh installs them)", strings.Join(missing, ", "))
	}
	n := min(maxAutoRealNodes, max(minAutoRealNodes, env.cpus))
	if env.memAvailMiB >= 0 {
		fit := env.memAvailMiB / autoRealNodeMiB
		if fit < minAutoRealNodes {
			return 0, fmt.Sprintf("only %d MiB of memory available, %d needed for %d", env.memAvailMiB, minAutoRealNodes*autoRealNodeMiB, minAutoRealNodes)
		}
		n = min(n, fit)
	}
	return n, ""
}

// memAvailableMiB is MemAvailable of /proc/meminfo, or -1.
func memAvailableMiB() int {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return -1
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				return -1
			}
			return kb / 1024
		}
	}
	return -1
}
