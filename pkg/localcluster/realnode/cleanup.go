package realnode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

const cgroupFS = "/sys/fs/cgroup"

// cleanup removes everything of the slot, whoever made it: processes
// first (they hold mounts, namespaces and cgroups), then mounts, network
// namespaces, links, cgroups and the working directory.
func (s *slot) cleanup(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	var errs []error
	if pids := s.processes(); len(pids) > 0 {
		logger.V(2).Info("Killing a real-node slot's processes", "slot", s.name(), "pids", pids)
		errs = append(errs, killAll(ctx, pids))
	}
	for _, m := range s.mounts() {
		errs = append(errs, unmount(m))
	}
	for _, ns := range s.netnsNames() {
		if err := run(ctx, "ip", "netns", "delete", ns); err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range s.links() {
		errs = append(errs, deleteLink(ctx, l))
	}
	for _, c := range s.cgroups() {
		if err := removeCgroupTree(c); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range s.runtimeFiles() {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// The shims and the CNI library made these directories; they go when
	// nothing else uses them (rmdir fails on a directory that is not empty).
	for _, d := range []string{shimSocketDir, filepath.Dir(filepath.Clean(shimSocketDir)), cniResultsDir, filepath.Dir(cniResultsDir)} {
		_ = unix.Rmdir(d)
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", s.dir, err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("realnode: clean up slot %s: %w", s.name(), err)
	}
	return nil
}

// leftovers lists what of the slot still exists on the machine.
func (s *slot) leftovers() []string {
	var out []string
	for _, p := range s.processes() {
		out = append(out, "process "+strconv.Itoa(p))
	}
	for _, m := range s.mounts() {
		out = append(out, "mount "+m)
	}
	for _, n := range s.netnsNames() {
		out = append(out, "netns "+n)
	}
	for _, l := range s.links() {
		out = append(out, "link "+l)
	}
	for _, c := range s.cgroups() {
		out = append(out, "cgroup "+c)
	}
	for _, f := range s.runtimeFiles() {
		out = append(out, "file "+f)
	}
	return out
}

// Where containerd's shims and the CNI library keep files outside the
// nodes' directories, at fixed places: a shim's socket (its address is in
// its bundle), and the CNI result cache, per pod sandbox.
const (
	shimSocketDir = "/run/containerd/s/"
	cniResultsDir = "/var/lib/cni/results"
)

// runtimeFiles lists the slot's files in those places that still exist:
// those of every task bundle under a node's containerd state, found
// through the bundle, so nothing of another containerd is touched.
func (s *slot) runtimeFiles() []string {
	bundles, _ := filepath.Glob(filepath.Join(s.dir, "*", "containerd", "state", "io.containerd.runtime.v2.task", "*", "*"))
	var out []string
	for _, b := range bundles {
		if sock := shimSocket(b); strings.HasPrefix(sock, shimSocketDir) && !strings.Contains(sock, "..") {
			if _, err := os.Lstat(sock); err == nil {
				out = append(out, sock)
			}
		}
		id := filepath.Base(b)
		cache, _ := filepath.Glob(filepath.Join(cniResultsDir, "*-"+id+"-*"))
		out = append(out, cache...)
	}
	return out
}

// processes are those whose command line names the slot's directory
// (containerd, its shims, kubelet, kube-proxy, all configured with paths
// under it) or that run in one of the slot's cgroups (the containers).
func (s *slot) processes() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	dirMark := []byte(s.dir + "/")
	cgMark := "/" + s.name()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || !processAlive(pid) {
			continue // a zombie holds nothing but its exit status
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, dirMark) {
			pids = append(pids, pid)
			continue
		}
		cg, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		for _, line := range strings.Split(string(cg), "\n") {
			if _, path, ok := strings.Cut(line[strings.IndexByte(line, ':')+1:], ":"); ok &&
				(path == cgMark || strings.HasPrefix(path, cgMark+"/")) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// killAll sends SIGKILL and waits until the processes are gone (reaped by
// whoever is their parent, this process for its own children).
func killAll(ctx context.Context, pids []int) error {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var alive []int
		for _, p := range pids {
			if processAlive(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still alive after SIGKILL", alive)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kill %v: %w", alive, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// processAlive is false for a gone process and for a zombie, which holds
// nothing but its exit status.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// mounts are the mount points under the slot's directory and the pinned
// namespaces of the slot, deepest first.
func (s *slot) mounts() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if strings.HasPrefix(mp, s.dir+"/") || strings.HasPrefix(mp, netnsPath(s.name()+"-")) {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

func (s *slot) netnsNames() []string {
	matches, _ := filepath.Glob(netnsPath(s.name() + "-*"))
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		out = append(out, filepath.Base(m))
	}
	return out
}

// links are the slot's links on the machine: its bridge and the machine's
// ends of its veths (whose other ends go with their namespaces).
func (s *slot) links() []string {
	entries, _ := os.ReadDir("/sys/class/net")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), s.linkPrefix()) {
			out = append(out, e.Name())
		}
	}
	// veths before the bridge they are enslaved to.
	sort.Slice(out, func(i, j int) bool { return out[i] != s.bridge() && out[j] == s.bridge() })
	return out
}

// cgroups are the slot's top cgroup in every hierarchy that has it.
func (s *slot) cgroups() []string {
	hier, _ := os.ReadDir(cgroupFS)
	var out []string
	for _, h := range hier {
		if !h.IsDir() {
			continue // cpu,cpuacct style symlinks name a hierarchy listed on its own
		}
		p := filepath.Join(cgroupFS, h.Name(), s.name())
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// removeCgroupTree removes a cgroup and its children, deepest first; a
// cgroup directory can only be rmdir'ed once empty of children and tasks.
func removeCgroupTree(root string) error {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	var errs []error
	for _, d := range dirs {
		var err error
		// A just-killed task may take a moment to leave its cgroup.
		for range 50 {
			if err = unix.Rmdir(d); err == nil || errors.Is(err, unix.ENOENT) {
				err = nil
				break
			}
			if !errors.Is(err, unix.EBUSY) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// run runs a command, its output in the error when it fails.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// shimSocket reads a bundle's shim socket: containerd 2 records it in
// bootstrap.json, older shims in a file named address.
func shimSocket(bundle string) string {
	var params struct {
		Address string `json:"address"`
	}
	if b, err := os.ReadFile(filepath.Join(bundle, "bootstrap.json")); err == nil && json.Unmarshal(b, &params) == nil {
		return strings.TrimPrefix(params.Address, "unix://")
	}
	if b, err := os.ReadFile(filepath.Join(bundle, "address")); err == nil {
		return strings.TrimPrefix(strings.TrimSpace(string(b)), "unix://")
	}
	return ""
}

// nodeProcess says whether pid belongs to the node whose files are under
// dir and whose cgroups are under cgroupRoot.
func nodeProcess(pid int, dir, cgroupRoot string) bool {
	cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if bytes.Contains(cmdline, []byte(dir+"/")) {
		return true
	}
	cg, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	return bytes.Contains(cg, []byte(":"+cgroupRoot+"/")) || bytes.Contains(cg, []byte(":"+cgroupRoot+"\n"))
}

// deleteLink deletes a link that may be going already: a veth goes with
// the namespace of its other end, which the kernel tears down after
// `ip netns delete` returns.
func deleteLink(ctx context.Context, name string) error {
	err := run(ctx, "ip", "link", "delete", name)
	if _, statErr := os.Stat(filepath.Join("/sys/class/net", name)); errors.Is(statErr, os.ErrNotExist) {
		return nil
	}
	return err
}

func hasPathPrefix(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

func unmount(m string) error {
	if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", m, err)
	}
	return nil
}
