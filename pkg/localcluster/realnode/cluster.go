package realnode

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/sbin"
)

// Config says where the programs are and how nodes reach the API server.
type Config struct {
	// BinDir holds kubelet, kube-proxy, containerd, containerd-shim-runc-v2,
	// ctr, the CNI plugins in cni/ and the image tarballs in images/.
	BinDir string
	// Root holds the slot locks and the nodes' files; DefaultRoot if empty.
	Root string
	// APIServerPort is kube-apiserver's port on 127.0.0.1.
	APIServerPort int
	// Credentials issues a client certificate for user in groups (the
	// control plane's UserConfig): kubelets authenticate as
	// system:node:NAME, kube-proxy as system:kube-proxy.
	Credentials func(user string, groups ...string) (*rest.Config, error)
	// Images are image tarballs imported into every node's containerd;
	// empty means every *.tar in BinDir/images.
	Images []string
	// ProxyMode is kube-proxy's mode: "iptables" (the default) or
	// "nftables".
	ProxyMode string
	// Runc is the runc binary; found on the PATH if empty.
	Runc string
	// NodeLabels are labels every kubelet registers its Node with
	// (--node-labels), e.g. to keep workloads for real nodes there.
	NodeLabels map[string]string
	// NodeLeaseSeconds is the kubelets' node Lease duration (they renew
	// it every quarter of that); 0 is the kubelet's 40. A node monitor
	// with a grace period shorter than the renewal interval would see
	// live nodes go silent.
	NodeLeaseSeconds int
	// ClusterDNS is the cluster DNS Service's address the kubelets give
	// pods (clusterDNS), with ClusterDomain ("cluster.local" if empty) as
	// their search domain. The zero Addr sets none: whoever runs the
	// cluster DNS names its address.
	ClusterDNS netip.Addr
	// ClusterDomain is the kubelets' clusterDomain when ClusterDNS is set.
	ClusterDomain string
	// LoadBalancerNetwork gives the slot a load-balancer namespace that
	// owns the VIP range (LoadBalancerNetns), instead of the machine's
	// bridge, and a clients' address on the machine outside the nodes'
	// range (ClientAddr): what a cloud's data plane that forwards packets
	// and keeps the client's address needs. See lbnet.go.
	LoadBalancerNetwork bool
	// DualStack gives the slot an IPv6 network beside its IPv4 one: each
	// node an IPv6 address too (the kubelet's --node-ip is the pair, IPv4
	// first), its pods an address of each family of their node's pod
	// CIDRs, and, with LoadBalancerNetwork, an IPv6 VIP range
	// (VIPPool6) in the load-balancer namespace with an IPv6 clients'
	// address on the machine (ClientAddr6). See ipv6.go.
	DualStack bool
	// ServiceCIDRs are the cluster's service CIDRs (kube-apiserver's
	// --service-cluster-ip-range). Each node namespace gets a route for
	// each on its link, as a node's default route covers them elsewhere:
	// a host-network process' packet to a ClusterIP needs a route before
	// kube-proxy's output rules rewrite it to an endpoint. An IPv6 one
	// needs DualStack.
	ServiceCIDRs []netip.Prefix
}

// defaultDNS gives a cluster DNS the usual domain when none is named.
func (cfg *Config) defaultDNS() {
	if cfg.ClusterDNS.IsValid() && cfg.ClusterDomain == "" {
		cfg.ClusterDomain = "cluster.local"
	}
}

// Cluster is a set of real nodes sharing one slot of the machine.
type Cluster struct {
	cfg  Config
	slot *slot

	mu    sync.Mutex
	nodes map[string]*Node
	used  map[int]bool // node indexes in use: addresses and veth names
}

// Start takes a free slot, cleaning what a killed previous holder left,
// and creates its bridge. Nodes come with AddNode.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.BinDir == "" || cfg.APIServerPort == 0 || cfg.Credentials == nil {
		return nil, errors.New("realnode: BinDir, APIServerPort and Credentials are required")
	}
	if cfg.Root == "" {
		cfg.Root = DefaultRoot
	}
	cfg.defaultDNS()
	for _, p := range cfg.ServiceCIDRs {
		if !p.IsValid() || p != p.Masked() {
			return nil, fmt.Errorf("realnode: ServiceCIDRs: %q is not a network's prefix", p)
		}
		if p.Addr().Is6() && !cfg.DualStack {
			return nil, fmt.Errorf("realnode: ServiceCIDRs: %s is IPv6 and the slot is not DualStack", p)
		}
	}
	switch cfg.ProxyMode {
	case "":
		cfg.ProxyMode = "iptables"
	case "iptables", "nftables":
	default:
		return nil, fmt.Errorf("realnode: ProxyMode %q: want iptables or nftables", cfg.ProxyMode)
	}
	if cfg.Runc == "" {
		p, err := sbin.LookPath("runc")
		if err != nil {
			return nil, fmt.Errorf("realnode: runc not found (hack/install-deps.sh installs it): %w", err)
		}
		cfg.Runc = p
	}
	if len(cfg.Images) == 0 {
		imgs, _ := filepath.Glob(filepath.Join(cfg.BinDir, "images", "*.tar"))
		cfg.Images = imgs
	}
	for _, b := range []string{"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "cni/bridge", "cni/host-local", "cni/loopback"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, b)); err != nil {
			return nil, fmt.Errorf("realnode: %s missing in %s (make tools builds it): %w", b, cfg.BinDir, err)
		}
	}
	s, err := acquireSlot(ctx, cfg.Root, cfg.DualStack)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, slot: s, nodes: map[string]*Node{}, used: map[int]bool{}}
	if err := s.setupBridge(ctx, !cfg.LoadBalancerNetwork); err != nil {
		_ = c.Stop(ctx)
		return nil, err
	}
	if cfg.LoadBalancerNetwork {
		if err := s.setupLBNetwork(ctx); err != nil {
			_ = c.Stop(ctx)
			return nil, err
		}
	}
	klog.FromContext(ctx).Info("Real-node slot taken", "slot", s.name(), "subnet", s.subnet, "bridge", s.bridge(),
		"loadBalancerNetwork", c.LoadBalancerNetns())
	return c, nil
}

// Subnet is the nodes' network; the machine holds its first address.
func (c *Cluster) Subnet() netip.Prefix { return c.slot.subnet }

// VIPPool is where load balancers' VIPs belong for the machine and the
// nodes' pods both to reach them: every address of it is the machine's,
// on the slot's bridge, and on the nodes' own link. A cloud serving the
// cluster takes its VIPs from here (localcloud's --vip-pool).
func (c *Cluster) VIPPool() netip.Prefix { return c.slot.vipPool() }

// Subnet6 is the nodes' IPv6 network with Config.DualStack; the zero
// Prefix without.
func (c *Cluster) Subnet6() netip.Prefix {
	if !c.slot.dualStack {
		return netip.Prefix{}
	}
	return c.slot.subnet6()
}

// VIPPool6 is the IPv6 VIP range (localcloud's --vip6-pool) with
// Config.DualStack and Config.LoadBalancerNetwork; the zero Prefix
// without.
func (c *Cluster) VIPPool6() netip.Prefix {
	if !c.slot.dualStack || !c.cfg.LoadBalancerNetwork {
		return netip.Prefix{}
	}
	return c.slot.vipPool6()
}

// Name is the slot's name, the prefix of its namespaces and cgroups.
func (c *Cluster) Name() string { return c.slot.name() }

// Node returns a started node, or nil.
func (c *Cluster) Node(name string) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

// AddNode starts a node: its namespace and address, containerd with the
// images, kubelet and kube-proxy. The kubelet registers the Node itself.
func (c *Cluster) AddNode(ctx context.Context, name string) (*Node, error) {
	if err := validNodeName(name); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if _, ok := c.nodes[name]; ok {
		c.mu.Unlock()
		return nil, fmt.Errorf("realnode: node %q already exists", name)
	}
	i := 0
	for c.used[i] {
		i++
	}
	if i >= maxNodes {
		c.mu.Unlock()
		return nil, fmt.Errorf("realnode: node %q: all %d node addresses in use", name, maxNodes)
	}
	c.used[i] = true
	n := &Node{Name: name, IP: c.slot.nodeAddr(i), IP6: c.nodeAddr6(i), index: i, cluster: c,
		paths: nodePaths{dir: filepath.Join(c.slot.dir, name)}, ns: c.slot.netnsName(name)}
	c.nodes[name] = n
	c.mu.Unlock()
	if err := n.start(ctx); err != nil {
		_ = c.RemoveNode(ctx, name)
		return nil, err
	}
	return n, nil
}

// RemoveNode stops a node's daemons and removes its namespace, link and
// cgroups; its pods' containers go with them.
func (c *Cluster) RemoveNode(ctx context.Context, name string) error {
	c.mu.Lock()
	n, ok := c.nodes[name]
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("realnode: no node %q", name)
	}
	err := n.teardown(ctx)
	c.mu.Lock()
	delete(c.nodes, name)
	delete(c.used, n.index)
	c.mu.Unlock()
	return err
}

// Stop stops every node and removes everything the slot made, then checks
// that nothing is left and gives the slot back.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	nodes := make([]*Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.nodes = map[string]*Node{}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.stopDaemons(ctx) }()
	}
	wg.Wait()
	err := c.slot.cleanup(ctx)
	if left := c.slot.leftovers(); len(left) > 0 {
		err = errors.Join(err, fmt.Errorf("realnode: left after stop: %s", strings.Join(left, ", ")))
	}
	if err == nil {
		// Only a slot known clean is marked so; otherwise the next
		// holder tries again.
		err = c.slot.markClean()
	}
	c.slot.release()
	return err
}

// Leftovers lists what of the cluster's slot still exists on the machine
// (processes, mounts, namespaces, links, cgroups); empty after Stop.
func (c *Cluster) Leftovers() []string { return c.slot.leftovers() }

func validNodeName(name string) error {
	if name == "" || len(name) > 40 {
		return fmt.Errorf("realnode: node name %q: want 1 to 40 characters", name)
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return fmt.Errorf("realnode: node name %q: only a-z, 0-9 and '-' allowed", name)
		}
	}
	return nil
}

func (c *Cluster) nodeAddr6(i int) netip.Addr {
	if !c.slot.dualStack {
		return netip.Addr{}
	}
	return c.slot.nodeAddr6(i)
}
