package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Leftover is a live process whose command line names a run's directory.
type Leftover struct {
	Pid int
	Cmd string
}

func (l Leftover) String() string { return fmt.Sprintf("%d (%s)", l.Pid, l.Cmd) }

// Leftovers returns the live processes, zombies excluded, whose command
// line names dir. Every process a run starts does (etcd's data directory,
// kube-apiserver's certificates, kwok's kubeconfig, localcloud's state,
// each controller manager's kubeconfig), so after a run's cleanup the
// list must be empty: that is how the runner checks it left nothing
// running.
func Leftovers(dir string) ([]Leftover, error) {
	dir = filepath.Clean(dir)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("harness: list processes: %w", err)
	}
	self := os.Getpid()
	var out []Leftover
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !namesDir(cmdline, dir) || zombie(pid) {
			// Gone meanwhile, or not ours.
			continue
		}
		out = append(out, Leftover{Pid: pid, Cmd: strings.Join(strings.Fields(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))), " ")})
	}
	return out, nil
}

// namesDir reports whether an argument is dir, lies under it, or is a
// --flag=value whose value does.
func namesDir(cmdline []byte, dir string) bool {
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if _, v, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(arg, "-") {
			arg = v
		}
		if arg == dir || strings.HasPrefix(arg, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// zombie reports whether pid has exited and waits for its parent to reap
// it: such a process holds no port or memory.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// KillLeftovers sends SIGKILL to every leftover of dir and returns what
// it found, so that the caller can report it: the runner's last line of
// defence, should a cleanup path miss a process.
func KillLeftovers(dir string) ([]Leftover, error) {
	left, err := Leftovers(dir)
	for _, l := range left {
		_ = syscall.Kill(l.Pid, syscall.SIGKILL)
	}
	return left, err
}
