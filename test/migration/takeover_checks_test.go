package migration

import (
	"maps"
	"strings"
	"testing"
	"time"
)

// switchRecord is what a switch did, for the checks.
type switchRecord struct {
	from         string
	to           *ccm
	kind         string // the new leader's implementation
	handOver     bool
	joined       string // the node that joined while no one led
	gap          time.Duration
	lbsBefore    map[string]string
	routesBefore int
	traffic      *traffic
	changes      []string // Node and Service changes, from managedFields
	events       []string
	requests     []write // every write request of either process, from the audit log
}

// checkCloud checks the cloud after a switch: no load balancer created,
// updated or deleted, the same VIPs, one route more (the joined node's),
// and traffic that never failed; and logs the switch's figures.
func (c *cluster) checkCloud(t *testing.T, sw *switchRecord, vips map[string]string) {
	t.Helper()
	stats, err := c.cloud.Stats(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	lbsAfter, err := c.lbs(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	vipsAfter, err := c.vips(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	routesAfter, err := c.cloud.ListRoutes(c.ctx, clusterName)
	if err != nil {
		t.Fatal(err)
	}
	name, tr := sw.to.name, sw.traffic
	t.Logf("%s → %s (hand-over %v): gap %.1fs with no leader; cloud writes: CreateLoadBalancer %d, UpdateLoadBalancer %d, DeleteLoadBalancer %d, CreateRoute %d, DeleteRoute %d; %s; API changes: %s; API write requests: %s; events: %d (%s)",
		sw.from, name, sw.handOver, sw.gap.Seconds(), stats.Count("CreateLoadBalancer"), stats.Count("UpdateLoadBalancer"),
		stats.Count("DeleteLoadBalancer"), stats.Count("CreateRoute"), stats.Count("DeleteRoute"), tr, summary(sw.changes),
		writeSummary(sw.requests), len(sw.events), summary(sw.events))
	for _, op := range []string{"CreateLoadBalancer", "UpdateLoadBalancer", "DeleteLoadBalancer", "CreateRoute", "DeleteRoute", "DeleteInstance"} {
		want := int64(0)
		if op == "CreateRoute" {
			want = 1 // the joined node's
		}
		if n := stats.Count(op); n != want {
			t.Errorf("%s → %s: %d %s calls, want %d", sw.from, name, n, op, want)
		}
	}
	if !maps.Equal(sw.lbsBefore, lbsAfter) {
		t.Errorf("load balancers changed: %v → %v", sw.lbsBefore, lbsAfter)
	}
	if !maps.Equal(vips, vipsAfter) {
		t.Errorf("VIPs changed: %v → %v", vips, vipsAfter)
	}
	if len(routesAfter) != sw.routesBefore+1 {
		t.Errorf("routes: %d → %d, want one more (%s's)", sw.routesBefore, len(routesAfter), sw.joined)
	}
	if tr.heldFail.Load() != 0 || tr.freshFail.Load() != 0 || tr.held.Load() == 0 {
		t.Errorf("traffic during the switch: %s; first error: %v", tr, tr.firstErr.Load())
	}
}

// checkWrites checks the API side of a switch: no write to a Node or
// Service but the new leader's to the joined node, every controller
// started in the new leader, and no storm of events.
func (sw *switchRecord) checkWrites(t *testing.T, services int) {
	t.Helper()
	name := sw.to.name
	// Stratus adds its load-balancer conditions (LoadBalancerServing and
	// the others) to a Service that lacks them, which every Service does
	// after upstream led: one status write per Service, that change only
	// (checkCloud holds the ingress to its VIPs). Upstream writes none.
	for _, ch := range sw.changes {
		svc, ok := strings.CutSuffix(ch, " by service-lb-controller(Updatestatus)")
		switch {
		case strings.HasPrefix(ch, "node/"+sw.joined+" "):
		case sw.kind == "stratus" && ok && strings.HasPrefix(svc, "service/"):
		default:
			t.Errorf("write to a Node or Service during the switch, where nothing changed: %s", ch)
		}
	}
	// The audit log also shows the writes that would change nothing (a
	// patch already true), which the objects' managedFields cannot.
	var joinedWrites int
	conditionWrites := map[string]int{}
	for _, r := range sw.requests {
		switch {
		case !r.isNodeOrService():
		case r.process == sw.kind && strings.HasSuffix(r.what, " "+sw.joined):
			joinedWrites++
		case r.process == "stratus" && sw.kind == "stratus" && r.verb == "patch" && strings.HasPrefix(r.what, "services/status "):
			// Its conditions, as above: once per Service.
			if conditionWrites[r.what]++; conditionWrites[r.what] > 1 {
				t.Errorf("%s wrote %s more than once during the switch", name, r.what)
			}
		default:
			t.Errorf("write request to a Node or Service during the switch, where nothing changed: %s", r)
		}
	}
	if joinedWrites == 0 {
		t.Errorf("%s made no write to %s, which it initialized", name, sw.joined)
	}
	// Every controller ran in the new leader: a switch that wrote nothing
	// because a controller never started would prove nothing.
	for _, ctrl := range everyController[sw.kind] {
		if !sw.to.started(ctrl) {
			t.Errorf("%s did not start %s after taking the lease (log %s)", name, ctrl, sw.to.LogFile)
		}
	}
	// Both announce every load balancer they sync when they start (two
	// events per Service, as upstream does) and the node they initialize;
	// the leases' holders announce taking (and Stratus releasing) the
	// lease. The joined node changes each load balancer's node set once:
	// a leader whose first sync ran before the node was ready updates the
	// load balancers it concerns after (upstream does when its timing falls
	// so), at most once per Service. More is a storm.
	var elections, aboutJoined, updates int
	for _, e := range sw.events {
		switch {
		case strings.HasPrefix(e, "LeaderElection "):
			elections++
		case strings.Contains(e, " node/"+sw.joined+" "):
			aboutJoined++
		case strings.HasPrefix(e, "UpdatedLoadBalancer "):
			updates++
		}
	}
	if len(sw.events)-elections-aboutJoined-updates > 2*services || updates > services || elections > 2 || aboutJoined > 2 {
		t.Errorf("%d events during the switch (%d elections, %d about %s, %d load balancer updates), more than 2 per Service, 1 update per Service, 2 elections and 2 about the joined node: %s",
			len(sw.events), elections, aboutJoined, sw.joined, updates, summary(sw.events))
	}
}
