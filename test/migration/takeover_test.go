package migration

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const (
	nodeCount = 3
	// settlePasses is how many route reconciliations (one ListRoutes each,
	// every 10 s in both implementations) the new leader must complete
	// after it has handled the joined node, before the switch is judged:
	// by then it has synced every Service and Node once and run its
	// periodic loops at least once.
	settlePasses = 2
)

// TestTakeover proves that Stratus takes over from the upstream
// cloud-controller-manager, and hands back to it, without touching a load
// balancer, a route, a VIP or a node, while traffic flows, making only the
// change that really happened during the switch (a node joined): upstream →
// Stratus as a plain replacement (upstream keeps its lease on SIGTERM, so
// the gap is its lease expiry), Stratus → upstream (Stratus releases its
// lease), and upstream → Stratus with the documented hand-over (delete the
// Lease once the old process is gone).
func TestTakeover(t *testing.T) {
	ctx := testbed.Context(t, 12*time.Minute)
	c := newCluster(t, ctx)
	c.addNodes(nodeCount, localcluster.NodeOptions{})
	up := c.start("upstream", "upstream-1")
	c.waitFor("upstream to initialize the nodes", 2*time.Minute, c.allNodesInitialized, up)
	svcs := services()
	c.createServices(svcs)
	protos := map[string]string{}
	for _, s := range svcs {
		protos[s.Name] = string(s.Spec.Ports[0].Protocol)
	}
	var vips map[string]string
	c.waitFor("upstream to publish every load balancer and route", 2*time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		if vips, err = c.vips(ctx); err != nil {
			return false, nil
		}
		for name, vip := range vips {
			if vip == "" || probe(ctx, protos[name], vip) != nil {
				return false, nil
			}
		}
		routes, err := c.cloud.ListRoutes(ctx, clusterName)
		return err == nil && len(routes) == nodeCount, nil
	}, up)

	stratus := c.switchOver(t, up, "stratus", "stratus-1", vips, protos, false)
	up2 := c.switchOver(t, stratus, "upstream", "upstream-2", vips, protos, false)
	c.switchOver(t, up2, "stratus", "stratus-2", vips, protos, true)
}

// switchOver starts the successor next to the running leader, stops the
// leader with SIGTERM and checks what changed until the successor has
// settled. With handOver, the test deletes the Lease once the old leader
// has exited, as docs/migration.md tells operators to.
func (c *cluster) switchOver(t *testing.T, from *ccm, kind, name string, vips, protos map[string]string, handOver bool) *ccm {
	t.Helper()
	lbsBefore, err := c.lbs(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	routesBefore, err := c.cloud.ListRoutes(c.ctx, clusterName)
	if err != nil {
		t.Fatal(err)
	}
	holderBefore, _, err := c.lease(c.ctx, mainLease)
	if err != nil || holderBefore == "" {
		t.Fatalf("lease before the switch: %q, %v", holderBefore, err)
	}
	if err := c.cloud.ResetStats(c.ctx); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	w := c.recordWrites(t)
	tr := startTraffic(c.ctx, t, vips["tcp"], vips, protos)

	to := c.start(kind, name)
	c.waitFor(name+" to serve /healthz", time.Minute, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(to.port)+"/healthz", nil)
		resp, err := insecure.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, to)
	if h, _, _ := c.lease(c.ctx, mainLease); h != holderBefore {
		t.Fatalf("%s took the lease (%q) while %s held it", name, h, from.name)
	}
	if err := from.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := from.Wait(time.Minute); err != nil {
		t.Fatalf("%s after SIGTERM: %v", from.name, err)
	}
	exited := time.Now()
	// A real change while no one leads: a node joins, its machine running,
	// kept out of the load balancers. The new leader must initialize it
	// and route its pod CIDR, and write nothing else.
	joined := fmt.Sprintf("node-%02d", len(c.nodes))
	c.addNodes(1, localcluster.NodeOptions{Labels: map[string]string{corev1.LabelNodeExcludeBalancers: "true"}})
	if handOver {
		err := c.cs.CoordinationV1().Leases(leaseNS).Delete(c.ctx, mainLease, metav1.DeleteOptions{})
		if err != nil {
			t.Fatalf("hand-over: delete the lease: %v", err)
		}
	}
	var acquired time.Time
	c.waitFor(name+" to take the lease", time.Minute, func(ctx context.Context) (bool, error) {
		h, at, err := c.lease(ctx, mainLease)
		acquired = at
		return err == nil && h != "" && h != holderBefore, nil
	}, to)
	c.waitFor(name+" to initialize and route "+joined, time.Minute, func(ctx context.Context) (bool, error) {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, joined, metav1.GetOptions{})
		if err != nil || !initialized(n) {
			return false, nil
		}
		routes, err := c.cloud.ListRoutes(ctx, clusterName)
		return err == nil && len(routes) == len(routesBefore)+1, nil
	}, to)
	// Node changes trigger route passes too: count the periodic ones from
	// here, once the joined node is done.
	var listsAtJoined int64
	if st, err := c.cloud.Stats(c.ctx); err == nil {
		listsAtJoined = st.Count("ListRoutes")
	}
	c.waitFor(name+" to settle", time.Minute, func(ctx context.Context) (bool, error) {
		st, err := c.cloud.Stats(ctx)
		return err == nil && st.Count("ListRoutes") >= listsAtJoined+settlePasses, nil
	}, to)
	tr.end()
	changes, events := w.end()
	sw := &switchRecord{from: from.name, to: to, kind: kind, handOver: handOver, joined: joined, gap: acquired.Sub(exited),
		lbsBefore: lbsBefore, routesBefore: len(routesBefore), traffic: tr, changes: changes, events: events,
		requests: c.auditWrites(t, began, time.Now())}
	c.checkCloud(t, sw, vips)
	sw.checkWrites(t, len(vips))
	return to
}

// everyController is what each implementation runs with the takeover's
// flags: the same set, as upstream's app has no node IPAM controller and
// Stratus runs its own only when --controllers names it, whatever
// --allocate-node-cidrs says.
var everyController = map[string][]string{
	"upstream": {"cloud-node-controller", "cloud-node-lifecycle-controller", "service-lb-controller", "node-route-controller"},
	"stratus":  {"cloud-node-controller", "cloud-node-lifecycle-controller", "service-lb-controller", "node-route-controller"},
}

// started tells from the process' log whether it started the controller:
// Stratus logs "Controller started" controller="NAME", upstream's app
// Started "NAME".
func (m *ccm) started(controller string) bool {
	for _, l := range strings.Split(grepLines(m.LogFile, "tarted"), "\n") {
		if strings.Contains(l, `"Controller started"`) && strings.Contains(l, `controller="`+controller+`"`) ||
			strings.Contains(l, `Started "`+controller+`"`) || strings.Contains(l, `Started \"`+controller+`\"`) {
			return true
		}
	}
	return false
}
