package realnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
)

// Route sends a pod CIDR to the node that holds it, as a cloud's route
// table does.
type Route struct {
	Destination netip.Prefix
	NextHop     netip.Addr
}

// routeProto marks the routes SetRoutes installs (an iproute2 protocol
// number of its own), so that it replaces and removes only those.
const routeProto = "77"

// SetRoutes makes every node's namespace route exactly these pod CIDRs to
// their next hops (other nodes on the bridge), as the nodes of a cloud
// network follow its route table: a route missing here is a pod network
// that other nodes cannot reach. A node skips the routes whose next hop is
// itself; its own pod CIDR is its CNI bridge's.
func (c *Cluster) SetRoutes(ctx context.Context, routes []Route) error {
	c.mu.Lock()
	nodes := make([]*Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		errs = append(errs, n.setRoutes(ctx, routes))
	}
	return errors.Join(errs...)
}

func (n *Node) setRoutes(ctx context.Context, routes []Route) error {
	want := map[netip.Prefix]netip.Addr{}
	for _, r := range routes {
		if r.NextHop != n.IP && r.NextHop != n.IP6 && r.Destination.IsValid() && r.NextHop.IsValid() {
			want[r.Destination.Masked()] = r.NextHop
		}
	}
	have, err := n.installedRoutes(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for dst, via := range want {
		if have[dst] == via {
			continue
		}
		errs = append(errs, run(ctx, "ip", "-n", n.ns, "route", "replace", dst.String(), "via", via.String(), "proto", routeProto))
	}
	for dst := range have {
		if _, ok := want[dst]; !ok {
			errs = append(errs, run(ctx, "ip", "-n", n.ns, "route", "delete", dst.String(), "proto", routeProto))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("realnode: node %s routes: %w", n.Name, err)
	}
	return nil
}

// installedRoutes are the routes SetRoutes put in the node's namespace,
// of both families.
func (n *Node) installedRoutes(ctx context.Context) (map[netip.Prefix]netip.Addr, error) {
	have := map[netip.Prefix]netip.Addr{}
	for _, family := range []string{"-4", "-6"} {
		if err := n.installedRoutesOf(ctx, family, have); err != nil {
			return nil, err
		}
	}
	return have, nil
}

func (n *Node) installedRoutesOf(ctx context.Context, family string, have map[netip.Prefix]netip.Addr) error {
	out, err := exec.CommandContext(ctx, "ip", family, "-n", n.ns, "-j", "route", "show", "proto", routeProto).Output()
	if err != nil {
		return fmt.Errorf("realnode: node %s: list routes: %w", n.Name, err)
	}
	var list []struct {
		Dst     string `json:"dst"`
		Gateway string `json:"gateway"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return fmt.Errorf("realnode: node %s: list routes: %w", n.Name, err)
	}
	for _, r := range list {
		dst, err1 := netip.ParsePrefix(r.Dst)
		if a, err := netip.ParseAddr(r.Dst); err == nil {
			dst, err1 = netip.PrefixFrom(a, a.BitLen()), nil // ip prints a host route without its length
		}
		via, err2 := netip.ParseAddr(r.Gateway)
		if err1 == nil && err2 == nil {
			have[dst] = via
		}
	}
	return nil
}
