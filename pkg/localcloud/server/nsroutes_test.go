package server_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/internal/netns"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/dataplane"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
)

// The namespace of TestRouteTableInNamespace: its link holds addresses of
// a network of no slot's, so that the route table's next hops are on-link.
const (
	rtNS       = "stratus-lcrt"
	rtNodeNet  = "10.246.77.1/24"
	rtNodeNet6 = "fd00:5354:f9:77::1/64"
	rtNode     = "10.246.77.10"
	rtNode6    = "fd00:5354:f9:77::10"
)

func nsRoutes(t *testing.T, family string) string {
	t.Helper()
	out, err := exec.Command("ip", family, "-n", rtNS, "route", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip route show: %v: %s", err, out)
	}
	return string(out)
}

func mustIP(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// TestRouteTableInNamespace: a localcloud with a data-plane namespace
// routes each pod CIDR of its route table via its instance's address of
// the CIDR's family in that namespace, removes a route deleted from the
// table and the stale routes of its own an earlier run left, and leaves
// every other route alone.
func TestRouteTableInNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("routes in a network namespace need root")
	}
	_ = exec.Command("ip", "netns", "del", rtNS).Run()
	mustIP(t, "netns", "add", rtNS)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", rtNS).Run() })
	mustIP(t, "-n", rtNS, "link", "add", "nodes0", "type", "veth", "peer", "name", "nodes1")
	mustIP(t, "-n", rtNS, "link", "set", "nodes1", "up")
	mustIP(t, "-n", rtNS, "addr", "add", rtNodeNet, "dev", "nodes0")
	mustIP(t, "-n", rtNS, "-6", "addr", "add", rtNodeNet6, "dev", "nodes0", "nodad")
	mustIP(t, "-n", rtNS, "link", "set", "nodes0", "up")
	mustIP(t, "-n", rtNS, "link", "set", "lo", "up")
	// An earlier run's route, and one that is not localcloud's.
	mustIP(t, "-n", rtNS, "route", "add", "10.64.9.0/24", "via", rtNode, "proto", dataplane.RouteProto)
	mustIP(t, "-n", rtNS, "route", "add", "10.99.0.0/24", "via", rtNode)

	k := api.DefaultKnobs()
	k.LBProvisioningTime, k.LBDeletionTime = 0, 0
	_, ctx := ktesting.NewTestContext(t)
	srv, err := server.New(server.Config{StateDir: t.TempDir(), Knobs: &k, Pools: testPools(t),
		DataPlane: dataplane.Options{Netns: netns.Path(rtNS)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	c, err := client.New(srv.URL(), srv.Token(), client.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := c.CreateInstance(ctx, api.CreateInstanceRequest{Name: "n1", Zone: "zone-a", Region: "region-1", Type: "small",
		InternalAddress: rtNode, InternalAddress6: rtNode6})
	if err != nil {
		t.Fatal(err)
	}
	for name, cidr := range map[string]string{"n1-v4": "10.64.1.0/24", "n1-v6": "fd00:5354:fe:1::/64"} {
		if _, err := c.CreateRoute(ctx, "c1", api.CreateRouteRequest{Name: name, DestinationCIDR: cidr, InstanceID: inst.ID}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the route table in the namespace", func() bool {
		v4, v6 := nsRoutes(t, "-4"), nsRoutes(t, "-6")
		return strings.Contains(v4, "10.64.1.0/24 via "+rtNode) && !strings.Contains(v4, "10.64.9.0/24") &&
			strings.Contains(v6, "fd00:5354:fe:1::/64 via "+rtNode6)
	})
	if err := c.DeleteRoute(ctx, "c1", "n1-v4"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted route gone", func() bool { return !strings.Contains(nsRoutes(t, "-4"), "10.64.1.0/24") })
	if !strings.Contains(nsRoutes(t, "-4"), "10.99.0.0/24 via "+rtNode) {
		t.Fatalf("a route not localcloud's was removed:\n%s", nsRoutes(t, "-4"))
	}
	// A terminated instance's route is a blackhole: gone from the namespace.
	if _, err := c.DeleteInstance(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the blackhole route gone", func() bool { return !strings.Contains(nsRoutes(t, "-6"), "fd00:5354:fe:1::/64") })
}
