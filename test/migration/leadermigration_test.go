package migration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const migrationLease = "ccm-migration"

// migrationConfig moves the service and node lifecycle controllers between
// components; "*" lets whichever holds the migration lease run them.
const migrationConfig = `apiVersion: controllermanager.config.k8s.io/v1
kind: LeaderMigrationConfiguration
leaderName: ` + migrationLease + `
controllerLeaders:
  - name: service-lb-controller
    component: "*"
  - name: cloud-node-lifecycle-controller
    component: "*"
`

// TestLeaderMigrationWithUpstream runs the upstream peer and Stratus side
// by side with one LeaderMigrationConfiguration, as KEP-2436 runs the old
// and the new controller manager: each under its own main lease (upstream
// runs the other controllers there, Stratus only the migrated ones), both
// campaigning for the migration lease. The migrated controllers run in the
// holder only, as the leases and the writes show, and move to Stratus when
// the holder is killed.
func TestLeaderMigrationWithUpstream(t *testing.T) {
	ctx := testbed.Context(t, 8*time.Minute)
	began := time.Now()
	c := newCluster(t, ctx)
	c.addNodes(2, localcluster.NodeOptions{})
	// Two nodes whose readiness the test owns: taking their machines away
	// shows which process runs the node lifecycle controller.
	goneFirst, goneSecond := c.addUnmanagedNode(), c.addUnmanagedNode()
	cfg := filepath.Join(t.TempDir(), "migration.yaml")
	if err := os.WriteFile(cfg, []byte(migrationConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	migration := []string{"--enable-leader-migration", "--leader-migration-config=" + cfg}
	up := c.start("upstream", "upstream", append(migration, "--leader-elect-resource-name=upstream-main")...)
	c.waitFor("upstream to hold both leases", time.Minute, func(ctx context.Context) (bool, error) {
		mainHolder, _, err1 := c.lease(ctx, "upstream-main")
		migHolder, _, err2 := c.lease(ctx, migrationLease)
		return err1 == nil && err2 == nil && mainHolder != "" && migHolder == mainHolder, nil
	}, up)
	upstreamID, _, _ := c.lease(ctx, "upstream-main")
	c.waitFor("upstream to initialize the nodes", 2*time.Minute, c.allNodesInitialized, up)

	st := c.start("stratus", "stratus", append(migration, "--leader-elect-resource-name=stratus-main",
		"--controllers=service-lb-controller,cloud-node-lifecycle-controller")...)
	c.waitFor("Stratus to hold its main lease", time.Minute, func(ctx context.Context) (bool, error) {
		h, _, err := c.lease(ctx, "stratus-main")
		return err == nil && h != "", nil
	}, st, up)

	// While upstream holds the migration lease, a new Service is served by
	// upstream's service controller alone.
	c.createServices([]*corev1.Service{lbService("first", "TCP", nil)})
	c.waitFor("upstream to publish the first load balancer", time.Minute, c.hasIngress("first"), up, st)
	if h, _, _ := c.lease(ctx, migrationLease); h != upstreamID {
		t.Fatalf("migration lease held by %q, want upstream %q", h, upstreamID)
	}
	assertServedBy(t, c, "first", "upstream")
	c.removeMachine(goneFirst)
	c.waitFor("upstream's node lifecycle controller to delete "+goneFirst, time.Minute, c.nodeDeleted(goneFirst), up, st)
	text, err := st.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"GetLoadBalancer", "EnsureLoadBalancer", "UpdateLoadBalancer", "ListInstances", "InstanceExists"} {
		if n := metricSum(text, "stratus_cloud_requests_total", `operation="`+op+`"`); n != 0 {
			t.Errorf("Stratus made %v %s calls while upstream held the migration lease", n, op)
		}
	}

	// Killing the holder moves the migrated controllers to Stratus once the
	// lease expires; Stratus then serves the next Service alone.
	if err := up.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var acquired time.Time
	c.waitFor("Stratus to take the migration lease", time.Minute, func(ctx context.Context) (bool, error) {
		h, at, err := c.lease(ctx, migrationLease)
		acquired = at
		return err == nil && h != "" && h != upstreamID, nil
	}, st)
	t.Logf("migration lease moved to Stratus %.1fs after the holder was killed", acquired.Sub(killed).Seconds())
	stratusFrom := acquired
	c.createServices([]*corev1.Service{lbService("second", "TCP", nil)})
	c.waitFor("Stratus to publish the second load balancer", time.Minute, c.hasIngress("second"), st)
	assertServedBy(t, c, "second", "stratus")
	c.removeMachine(goneSecond)
	c.waitFor("Stratus' node lifecycle controller to delete "+goneSecond, time.Minute, c.nodeDeleted(goneSecond), st)
	if text, err = st.metrics(ctx); err != nil {
		t.Fatal(err)
	}
	if n := metricSum(text, "stratus_cloud_requests_total", `operation="EnsureLoadBalancer"`); n == 0 {
		t.Error("Stratus counts no EnsureLoadBalancer call after it took the migration lease")
	}
	if h, _, _ := c.lease(ctx, "upstream-main"); h != upstreamID {
		t.Errorf("Stratus took upstream's main lease: %q", h)
	}

	// And back: a new upstream process (its own main lease, so as not to
	// wait for the killed one's to expire) waits for the migration lease;
	// stopping Stratus releases it, so upstream takes over at its next
	// retry rather than after the lease duration.
	up2 := c.start("upstream", "upstream-2", append(migration, "--leader-elect-resource-name=upstream-main-2")...)
	c.waitFor("the new upstream process to hold its main lease", time.Minute, func(ctx context.Context) (bool, error) {
		h, _, err := c.lease(ctx, "upstream-main-2")
		return err == nil && h != "", nil
	}, up2, st)
	upstream2ID, _, _ := c.lease(ctx, "upstream-main-2")
	if h, _, _ := c.lease(ctx, migrationLease); h == upstream2ID {
		t.Fatal("upstream took the migration lease while Stratus held it")
	}
	if err := st.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := st.Wait(time.Minute); err != nil || code != 0 {
		t.Fatalf("Stratus after SIGTERM: exit %d, %v", code, err)
	}
	stopped := time.Now()
	c.waitFor("upstream to take the migration lease back", time.Minute, func(ctx context.Context) (bool, error) {
		h, at, err := c.lease(ctx, migrationLease)
		acquired = at
		return err == nil && h == upstream2ID, nil
	}, up2)
	t.Logf("migration lease back to upstream %.1fs after Stratus stopped (Stratus releases it)", acquired.Sub(stopped).Seconds())
	c.createServices([]*corev1.Service{lbService("third", "TCP", nil)})
	c.waitFor("upstream to publish the third load balancer", time.Minute, c.hasIngress("third"), up2)
	assertServedBy(t, c, "third", "upstream")
	c.assertMigratedWritesByHolder(t, began, stratusFrom, stopped, acquired, goneFirst, goneSecond)
}

// assertMigratedWritesByHolder checks, from the API server's audit log,
// that the migrated controllers' writes (to Services, and Node deletions)
// came from the process holding the migration lease at the time: upstream
// before Stratus took it (from) and after upstream took it back (back);
// Stratus, which runs only the migrated controllers, between from and its
// exit (to), and never a write to a Node or Service outside. The node
// lifecycle controller deleted the first node in upstream and the second
// in Stratus.
func (c *cluster) assertMigratedWritesByHolder(t *testing.T, began, from, to, back time.Time, goneFirst, goneSecond string) {
	t.Helper()
	all := c.auditWrites(t, began, time.Now())
	deletedBy := map[string]string{}
	var migrated []write
	for _, w := range all {
		if !w.isNodeOrService() {
			continue
		}
		if w.verb == "delete" && strings.HasPrefix(w.what, "nodes ") {
			deletedBy[strings.TrimPrefix(w.what, "nodes ")] = w.process
		}
		switch {
		case w.process == "stratus" && (w.at.Before(from) || w.at.After(to)):
			t.Errorf("Stratus wrote while it did not hold the migration lease (%s to %s): %s at %s",
				from.Format(time.StampMicro), to.Format(time.StampMicro), w, w.at.Format(time.StampMicro))
		case w.process == "upstream" && (strings.HasPrefix(w.what, "services") || w.verb == "delete") && w.at.After(from) && w.at.Before(back):
			t.Errorf("upstream's migrated controllers wrote while Stratus held the migration lease: %s at %s", w, w.at.Format(time.StampMicro))
		}
		if strings.HasPrefix(w.what, "services") || w.verb == "delete" {
			migrated = append(migrated, w)
		}
	}
	if deletedBy[goneFirst] != "upstream" || deletedBy[goneSecond] != "stratus" {
		t.Errorf("node deletions: %v, want %s by upstream and %s by stratus", deletedBy, goneFirst, goneSecond)
	}
	t.Logf("migrated controllers' writes (audit log): %s", writeSummary(migrated))
}

// nodeDeleted reports whether the Node is gone.
func (c *cluster) nodeDeleted(name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}
}

// hasIngress reports whether the Service has a load balancer ingress.
func (c *cluster) hasIngress(name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		vips, err := c.vips(ctx)
		return err == nil && vips[name] != "", nil
	}
}

// assertServedBy checks that exactly one implementation ("upstream" or
// "stratus") and not the other acted on the Service: every write of its
// status, in the API server's audit log, came from that process. Its events
// come from "service-controller" either way: Stratus reports them under
// upstream's source, which event filters select on.
func assertServedBy(t *testing.T, c *cluster, svc, impl string) {
	t.Helper()
	evs, err := c.cs.CoreV1().Events(namespace).List(c.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	var from []string
	for _, e := range evs.Items {
		src := e.ReportingController
		if src == "" {
			src = e.Source.Component
		}
		switch src {
		case "service-controller":
			from = append(from, e.Reason)
		case "service-lb-controller":
			t.Errorf("service %s: event %s from %q, want upstream's source service-controller", svc, e.Reason, src)
		}
	}
	if len(from) == 0 {
		t.Errorf("service %s: no events from service-controller", svc)
	}
	var writers []string
	for _, w := range c.auditWrites(t, time.Time{}, time.Now()) {
		if w.what != "services/status "+namespace+"/"+svc || w.dryRun {
			continue
		}
		writers = append(writers, w.process)
		if w.process != impl {
			t.Errorf("service %s: %s, want only %s's writes", svc, w, impl)
		}
	}
	if len(writers) == 0 {
		t.Errorf("service %s: no status write in the audit log", svc)
	}
	t.Logf("service %s: events %s from service-controller, status written by %s", svc, strings.Join(from, ", "), strings.Join(writers, ", "))
}
