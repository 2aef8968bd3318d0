package realnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/netns"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// Node is one real node: a namespace with containerd, kubelet and
// kube-proxy.
type Node struct {
	// Name is the Node's name, which the kubelet registers.
	Name string
	// IP is the node's address in its namespace, the kubelet's --node-ip.
	IP netip.Addr
	// IP6 is its IPv6 address in a dual-stack slot (Config.DualStack),
	// the second of the kubelet's --node-ip; zero otherwise.
	IP6 netip.Addr

	index   int
	cluster *Cluster
	paths   nodePaths
	ns      string

	mu         sync.Mutex
	containerd *proc
	kubelet    *proc
	proxy      *proc
	relay      *relay
}

// daemonGrace is how long a daemon may take to exit after SIGTERM.
const daemonGrace = 10 * time.Second

func (n *Node) start(ctx context.Context) error {
	c := n.cluster
	for _, d := range []string{n.paths.join("log"), n.paths.cniConfDir(), n.paths.join("kubelet")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("realnode: node %s: %w", n.Name, err)
		}
	}
	if err := c.slot.setupNodeNetwork(ctx, n.index, n.Name, c.cfg.LoadBalancerNetwork, c.cfg.ServiceCIDRs); err != nil {
		return err
	}
	if err := n.makeCgroupRoot(); err != nil {
		return err
	}
	if err := n.writeConfigs(); err != nil {
		return fmt.Errorf("realnode: node %s: %w", n.Name, err)
	}
	ln, err := listenIn(ctx, netnsPath(n.ns), "127.0.0.1:"+strconv.Itoa(c.cfg.APIServerPort))
	if err != nil {
		return err
	}
	n.relay = startRelay(ctx, ln, "127.0.0.1:"+strconv.Itoa(c.cfg.APIServerPort))
	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	if err := n.importImages(ctx); err != nil {
		return err
	}
	if err := n.StartKubelet(ctx); err != nil {
		return err
	}
	proxy, err := startProc(netnsPath(n.ns), n.paths.log("kube-proxy"), filepath.Join(c.cfg.BinDir, "kube-proxy"), nil,
		"--config="+n.paths.proxyConfig())
	if err != nil {
		return fmt.Errorf("realnode: node %s: %w", n.Name, err)
	}
	n.mu.Lock()
	n.proxy = proxy
	n.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Real node started", "node", n.Name, "ip", n.IP)
	return nil
}

// cgroupRoot is the kubelet's --cgroup-root: under the slot's cgroup, so
// that every pod's cgroup carries the slot's name.
func (n *Node) cgroupRoot() string { return "/" + n.cluster.slot.name() + "/" + n.Name }

// makeCgroupRoot creates the kubelet's cgroup root in every hierarchy (the
// kubelet refuses a root that does not exist). A new cpuset cgroup starts
// with no CPUs and no memory nodes, so those are copied from the root.
func (n *Node) makeCgroupRoot() error {
	hier, err := os.ReadDir(cgroupFS)
	if err != nil {
		return fmt.Errorf("realnode: cgroups: %w", err)
	}
	for _, h := range hier {
		if !h.IsDir() {
			continue
		}
		base := filepath.Join(cgroupFS, h.Name())
		dir := base
		for _, part := range []string{n.cluster.slot.name(), n.Name} {
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("realnode: cgroup %s: %w", dir, err)
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if v, err := os.ReadFile(filepath.Join(base, f)); err == nil {
					//nolint:gosec // G703: a hierarchy listed under /sys/fs/cgroup and names this package chose
					if err := os.WriteFile(filepath.Join(dir, f), v, 0o600); err != nil {
						return fmt.Errorf("realnode: cgroup %s: %w", dir, err)
					}
				}
			}
		}
	}
	return nil
}

// nodeConfigValues are what n's configuration files are rendered from.
func (c *Cluster) nodeConfigValues(n *Node) configValues {
	v := configValues{
		Dir: n.paths.dir, Socket: n.paths.containerdSocket(), Runc: c.cfg.Runc,
		CNIBin: filepath.Join(c.cfg.BinDir, "cni"), CNIConfDir: n.paths.cniConfDir(), CNITemplate: n.paths.cniTemplate(),
		SandboxImage: SandboxImage, NodeIP: n.IP.String(), CgroupRoot: n.cgroupRoot(), Name: n.Name, Mode: c.cfg.ProxyMode,
		Kubeconfig: n.paths.proxyKubeconfig(), LeaseSeconds: c.cfg.NodeLeaseSeconds,
	}
	if c.cfg.ClusterDNS.IsValid() {
		v.ClusterDNS, v.ClusterDomain = c.cfg.ClusterDNS.String(), c.cfg.ClusterDomain
	}
	return v
}

func (n *Node) writeConfigs() error {
	c := n.cluster
	v := c.nodeConfigValues(n)
	if err := writeTemplate(containerdTOML, n.paths.containerdConfig(), v); err != nil {
		return err
	}
	if err := writeTemplate(cniTemplate, n.paths.cniTemplate(), v); err != nil {
		return err
	}
	if err := writeTemplate(kubeletYAML, n.paths.kubeletConfig(), v); err != nil {
		return err
	}
	if err := writeTemplate(kubeProxyYAML, n.paths.proxyConfig(), v); err != nil {
		return err
	}
	kubelet, err := c.cfg.Credentials("system:node:"+n.Name, "system:nodes")
	if err != nil {
		return err
	}
	if err := localcluster.WriteKubeconfig(kubelet, n.paths.kubeletKubeconfig()); err != nil {
		return err
	}
	proxy, err := c.cfg.Credentials("system:kube-proxy")
	if err != nil {
		return err
	}
	return localcluster.WriteKubeconfig(proxy, n.paths.proxyKubeconfig())
}

func (n *Node) startContainerd(ctx context.Context) error {
	bin := n.cluster.cfg.BinDir
	// containerd finds its shim on the PATH.
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	p, err := startProc(netnsPath(n.ns), n.paths.log("containerd"), filepath.Join(bin, "containerd"), env,
		"--config="+n.paths.containerdConfig())
	if err != nil {
		return fmt.Errorf("realnode: node %s: %w", n.Name, err)
	}
	n.mu.Lock()
	n.containerd = p
	n.mu.Unlock()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("containerd exited: %w (log: %s)", p.exitErr(), n.paths.log("containerd"))
		}
		return n.ctr(ctx, "version") == nil, nil
	})
	if err != nil {
		return fmt.Errorf("realnode: node %s: containerd not ready: %w", n.Name, err)
	}
	return nil
}

func (n *Node) ctr(ctx context.Context, args ...string) error {
	full := append([]string{"--address", n.paths.containerdSocket(), "--namespace", "k8s.io"}, args...)
	return run(ctx, filepath.Join(n.cluster.cfg.BinDir, "ctr"), full...)
}

// importImages loads the image tarballs: the nodes have no registry.
func (n *Node) importImages(ctx context.Context) error {
	for _, img := range n.cluster.cfg.Images {
		if err := n.ImportImage(ctx, img); err != nil {
			return err
		}
	}
	return nil
}

// ImportImage loads an image tarball (docker-archive or OCI) into the
// node's containerd, where pods with imagePullPolicy Never or
// IfNotPresent find it.
func (n *Node) ImportImage(ctx context.Context, tarball string) error {
	if err := n.ctr(ctx, "images", "import", "--platform", "linux/"+runtime.GOARCH, tarball); err != nil {
		return fmt.Errorf("realnode: node %s: import %s: %w", n.Name, tarball, err)
	}
	return nil
}

// StartKubelet starts the node's kubelet (again, after StopKubelet).
func (n *Node) StartKubelet(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.kubelet != nil && !n.kubelet.exited() {
		return nil
	}
	root := n.paths.join("kubelet")
	args := []string{"--config=" + n.paths.kubeletConfig(), "--kubeconfig=" + n.paths.kubeletKubeconfig(),
		"--hostname-override=" + n.Name, "--node-ip=" + n.nodeIPs(), "--cloud-provider=external",
		"--root-dir=" + root, "--cert-dir=" + filepath.Join(root, "pki")}
	if labels := n.cluster.cfg.NodeLabels; len(labels) > 0 {
		kv := make([]string, 0, len(labels))
		for k, v := range labels {
			kv = append(kv, k+"="+v)
		}
		sort.Strings(kv)
		args = append(args, "--node-labels="+strings.Join(kv, ","))
	}
	p, err := startProc(netnsPath(n.ns), n.paths.log("kubelet"), filepath.Join(n.cluster.cfg.BinDir, "kubelet"), nil, args...)
	if err != nil {
		return fmt.Errorf("realnode: node %s: %w", n.Name, err)
	}
	n.kubelet = p
	klog.FromContext(ctx).V(4).Info("Kubelet started", "node", n.Name)
	return nil
}

// StopKubelet stops the node's kubelet, as a machine that stops would;
// its containers keep running until the node is removed.
func (n *Node) StopKubelet(ctx context.Context) {
	n.mu.Lock()
	p := n.kubelet
	n.mu.Unlock()
	if p != nil {
		p.stop(ctx, daemonGrace)
	}
}

// Log is the path of one daemon's log: containerd, kubelet or kube-proxy.
func (n *Node) Log(daemon string) string { return n.paths.log(daemon) }

// ContainerdSocket is the node's containerd socket, for
// `ctr --address SOCKET -n k8s.io images import`.
func (n *Node) ContainerdSocket() string { return n.paths.containerdSocket() }

// NetNS is the path of the node's network namespace, for nsenter --net=.
func (n *Node) NetNS() string { return netnsPath(n.ns) }

// Dial connects from inside the node's network namespace, as a process on
// the node would: to its pods, to other nodes, to a load balancer.
func (n *Node) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := netns.Do(n.NetNS(), func() error {
		var err error
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("realnode: node %s: dial %s: %w", n.Name, addr, err)
	}
	return c, nil
}

// Exec runs a command inside the node's network namespace.
func (n *Node) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.NetNS(), "--", name}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("realnode: node %s: %s: %w", n.Name, name, err)
	}
	return out, nil
}

func (n *Node) stopDaemons(ctx context.Context) {
	n.mu.Lock()
	procs := []*proc{n.proxy, n.kubelet, n.containerd}
	r := n.relay
	n.mu.Unlock()
	for _, p := range procs {
		if p != nil {
			p.stop(ctx, daemonGrace)
		}
	}
	if r != nil {
		r.stop()
	}
}

// teardown stops the node and removes what only it used: its processes'
// leftovers (shims, containers), mounts, namespace, link and cgroups.
func (n *Node) teardown(ctx context.Context) error {
	n.stopDaemons(ctx)
	s := n.cluster.slot
	var errs []error
	var pids []int
	for _, pid := range s.processes() {
		if nodeProcess(pid, n.paths.dir, n.cgroupRoot()) {
			pids = append(pids, pid)
		}
	}
	errs = append(errs, killAll(ctx, pids))
	for _, m := range s.mounts() {
		if hasPathPrefix(m, n.paths.dir) || m == netnsPath(n.ns) {
			errs = append(errs, unmount(m))
		}
	}
	if _, err := os.Stat(netnsPath(n.ns)); err == nil {
		errs = append(errs, run(ctx, "ip", "netns", "delete", n.ns))
	}
	errs = append(errs, deleteLink(ctx, s.veth(n.index)))
	for _, cg := range s.cgroups() {
		errs = append(errs, removeCgroupTree(filepath.Join(cg, n.Name)))
	}
	errs = append(errs, os.RemoveAll(n.paths.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("realnode: remove node %s: %w", n.Name, err)
	}
	return nil
}

// nodeIPs is the kubelet's --node-ip: the node's address, or its pair.
func (n *Node) nodeIPs() string {
	if n.IP6.IsValid() {
		return n.IP.String() + "," + n.IP6.String()
	}
	return n.IP.String()
}
