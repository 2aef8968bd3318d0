package realnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"

	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/netns"
	"github.com/stratus-ccm/stratus/internal/sbin"
)

// setupBridge creates the slot's bridge with the gateway address: the
// machine's only foothold in the slot's subnet, through which it reaches
// the nodes (kube-apiserver to kubelets, curl to node ports). With
// localVIPs the VIP pool is a local route on the bridge, as 127.0.0.0/8 is
// on lo: the machine owns every address of it without one address per
// load balancer, answers the nodes' ARP for them on the bridge, and the
// route goes with the bridge. Without, the load-balancer namespace owns
// them (lbnet.go).
func (s *slot) setupBridge(ctx context.Context, localVIPs bool) error {
	br := s.bridge()
	steps := [][]string{
		{"link", "add", br, "type", "bridge"},
		{"addr", "add", s.gateway().String() + "/24", "dev", br},
		{"link", "set", br, "up"},
	}
	if localVIPs {
		steps = append(steps, []string{"route", "add", "local", s.vipPool().String(), "dev", br, "table", "local"})
	}
	for _, args := range steps {
		if err := run(ctx, "ip", args...); err != nil {
			return fmt.Errorf("realnode: bridge: %w", err)
		}
	}
	if s.dualStack {
		for _, st := range s.bridgeSteps6() {
			if err := run(ctx, st[0], st[1:]...); err != nil {
				return fmt.Errorf("realnode: bridge: %w", err)
			}
		}
	}
	return nil
}

// setupNodeNetwork creates node i's namespace, its veth on the bridge
// (eth0 inside, with the node's address and no default route) and turns on
// forwarding inside the namespace only, so that its pods reach the bridge.
// Each of serviceCIDRs is routed on eth0, so that the node's own processes
// (host-network pods) reach ClusterIPs: the route lets the packet leave,
// and kube-proxy's output rules then send it to an endpoint; one that no
// rule rewrites finds no neighbour on the bridge and goes nowhere.
func (s *slot) setupNodeNetwork(ctx context.Context, i int, node string, lbNetwork bool, serviceCIDRs []netip.Prefix) error {
	ns := s.netnsName(node)
	addr := s.nodeAddr(i).String() + "/24"
	nft, err := sbin.LookPath("nft")
	if err != nil {
		return fmt.Errorf("realnode: node %s network: nft not found (hack/install-deps.sh installs it): %w", node, err)
	}
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", s.veth(i), "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"ip", "link", "set", s.veth(i), "master", s.bridge(), "up"},
		{"ip", "-n", ns, "addr", "add", addr, "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"nsenter", "--net=" + netnsPath(ns), "--", "/bin/sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"},
		// Pods reach the VIPs through the node's link; the machine has no
		// route to pod CIDRs (nor should it), so their connections leave
		// with the node's address, as a cloud's NAT would make them.
		{"nsenter", "--net=" + netnsPath(ns), "--", nft, "add table ip stratus; " +
			"add chain ip stratus vip-snat { type nat hook postrouting priority 100; }; " +
			"add rule ip stratus vip-snat oifname eth0 ip daddr " + s.vipPool().String() + " masquerade"},
	}
	if lbNetwork {
		steps = append(steps, s.nodeRouteToClients(ns))
	}
	if s.dualStack {
		steps = append(steps, s.nodeSteps6(ns, i, lbNetwork, nft)...)
	}
	for _, p := range serviceCIDRs {
		family := "-4"
		if p.Addr().Is6() {
			family = "-6"
		}
		steps = append(steps, []string{"ip", "-n", ns, family, "route", "add", p.String(), "dev", "eth0"})
	}
	for _, st := range steps {
		if err := run(ctx, st[0], st[1:]...); err != nil {
			return fmt.Errorf("realnode: node %s network: %w", node, err)
		}
	}
	return nil
}

// listenIn opens a TCP listener inside the network namespace at nsPath.
func listenIn(ctx context.Context, nsPath, addr string) (net.Listener, error) {
	ln, err := netns.Sockets{Path: nsPath}.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("realnode: listen %s in %s: %w", addr, nsPath, err)
	}
	return ln, nil
}

// relay forwards every connection accepted on ln to target, dialled from
// this process' own namespace: how the API server on the machine's
// loopback appears on each node's loopback.
type relay struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
}

func startRelay(ctx context.Context, ln net.Listener, target string) *relay {
	r := &relay{ln: ln, target: target}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				klog.FromContext(ctx).V(4).Info("Relay accept failed", "err", err)
				continue
			}
			go r.serve(ctx, c)
		}
	}()
	return r
}

func (r *relay) serve(ctx context.Context, c net.Conn) {
	defer func() { _ = c.Close() }()
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", r.target)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Relay dial failed", "target", r.target, "err", err)
		return
	}
	defer func() { _ = up.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// stop closes the listener; open connections end with their peers.
func (r *relay) stop() {
	_ = r.ln.Close()
	r.wg.Wait()
}
