package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"

	"github.com/stratus-ccm/stratus/internal/sbin"
)

// Route sends a destination (a pod CIDR) to a next hop (its instance's
// internal address of the destination's family), as an entry of the
// cloud's route table.
type Route struct {
	Destination netip.Prefix
	NextHop     netip.Addr
}

// RouteProto marks the routes SetRoutes installs in the data plane's
// namespace (an iproute2 protocol number of localcloud's own, not the
// sandbox's node routes'), so that it replaces and removes only those.
const RouteProto = "78"

// SetRoutes makes the data plane's namespace route exactly these
// destinations, as a VPC follows its route table: the load balancers'
// connections and health checks to pod addresses go through them, so a
// route missing from the cloud's table is an endpoint the load balancer
// cannot reach. Routes of RouteProto not in routes (an earlier run's, or
// deleted since) are removed; no other route of the namespace is touched.
// Without a namespace it does nothing: the machine's own routes are not
// localcloud's.
func (m *Manager) SetRoutes(ctx context.Context, routes []Route) error {
	if m.opts.Netns == "" {
		return nil
	}
	r, err := newRouter(m.opts.Netns)
	if err != nil {
		return err
	}
	want := map[netip.Prefix]netip.Addr{}
	for _, rt := range routes {
		if rt.Destination.IsValid() && rt.NextHop.IsValid() && rt.Destination.Addr().Is4() == rt.NextHop.Is4() {
			want[rt.Destination.Masked()] = rt.NextHop
		}
	}
	have, err := r.installed(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for dst, via := range want {
		if have[dst] != via {
			errs = append(errs, r.run(ctx, "route", "replace", dst.String(), "via", via.String(), "proto", RouteProto))
		}
	}
	for dst := range have {
		if _, ok := want[dst]; !ok {
			errs = append(errs, r.run(ctx, "route", "delete", dst.String(), "proto", RouteProto))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dataplane: routes in %s: %w", m.opts.Netns, err)
	}
	return nil
}

// router runs ip in the namespace at nsPath (a path, which ip -n does
// not take, hence nsenter).
type router struct {
	nsPath, ip, nsenter string
}

func newRouter(nsPath string) (router, error) {
	r := router{nsPath: nsPath}
	for name, dst := range map[string]*string{"ip": &r.ip, "nsenter": &r.nsenter} {
		p, err := sbin.LookPath(name)
		if err != nil {
			return r, fmt.Errorf("dataplane: routes: %w", err)
		}
		*dst = p
	}
	return r, nil
}

func (r router) output(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, nftTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.nsenter, append([]string{"--net=" + r.nsPath, "--", r.ip}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func (r router) run(ctx context.Context, args ...string) error {
	_, err := r.output(ctx, args...)
	return err
}

// installed are the routes of RouteProto in the namespace, both families.
func (r router) installed(ctx context.Context) (map[netip.Prefix]netip.Addr, error) {
	have := map[netip.Prefix]netip.Addr{}
	for _, family := range []string{"-4", "-6"} {
		out, err := r.output(ctx, family, "-j", "route", "show", "proto", RouteProto)
		if err != nil {
			return nil, err
		}
		var list []struct {
			Dst     string `json:"dst"`
			Gateway string `json:"gateway"`
		}
		if err := json.Unmarshal(out, &list); err != nil {
			return nil, fmt.Errorf("ip %s route show: %w", family, err)
		}
		for _, rt := range list {
			dst, err1 := netip.ParsePrefix(rt.Dst)
			if a, err := netip.ParseAddr(rt.Dst); err == nil {
				dst, err1 = netip.PrefixFrom(a, a.BitLen()), nil // ip prints a host route without its length
			}
			via, err2 := netip.ParseAddr(rt.Gateway)
			if err1 == nil && err2 == nil {
				have[dst] = via
			}
		}
	}
	return have, nil
}
