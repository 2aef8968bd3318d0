package migration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratus-ccm/stratus/deploy"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const planned = "stratus_observe_planned_changes_total"

// TestObserveBesideUpstream runs Stratus with --observe beside a healthy
// upstream cloud-controller-manager: in steady state it plans nothing and
// writes nothing; with changes pending while the incumbent is paused (a new
// Service, a node whose machine is gone, a route lost in the cloud, a new
// node to initialize, a node excluded from load balancers), it plans
// exactly what the incumbent then does once it resumes.
func TestObserveBesideUpstream(t *testing.T) {
	ctx := testbed.Context(t, 8*time.Minute)
	began := time.Now()
	c := newCluster(t, ctx)
	c.addNodes(2, localcluster.NodeOptions{})
	// One node whose readiness the test owns, to take its machine away.
	gone := c.addUnmanagedNode()
	// A long lease lets the incumbent be paused (SIGSTOP) without losing it.
	up := c.start("upstream", "upstream", "--leader-elect-lease-duration=90s", "--leader-elect-renew-deadline=80s")
	c.waitFor("upstream to initialize the nodes", 2*time.Minute, c.allNodesInitialized, up)
	svcs := services()
	c.createServices(svcs)
	c.waitFor("upstream to publish the load balancers and routes", time.Minute, func(ctx context.Context) (bool, error) {
		vips, err := c.vips(ctx)
		routes, rerr := c.cloud.ListRoutes(ctx, clusterName)
		if err != nil || rerr != nil || len(routes) != len(c.nodes) {
			return false, nil
		}
		for _, vip := range vips {
			if vip == "" {
				return false, nil
			}
		}
		return true, nil
	}, up)

	if err := c.cloud.ResetStats(ctx); err != nil {
		t.Fatal(err)
	}
	w := c.recordWrites(t)
	// The observer runs as an install would: the chart's ServiceAccount and
	// RBAC, each controller with its own credentials.
	obs := c.start("stratus", "observer", "--observe", "--use-service-account-credentials", "--kubeconfig="+c.chartKubeconfig())
	c.checkSteadyState(t, obs, up, w, len(svcs))

	// Pending changes while the incumbent is paused.
	if err := up.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	p := c.makePending(t, gone)
	plan := p.checkPlanned(t, c, obs)
	if err := up.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	p.checkIncumbentDid(t, c, up, obs, plan)

	if err := obs.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := obs.Wait(time.Minute); err != nil || code != 0 {
		t.Errorf("observer after SIGTERM: exit %d, %v", code, err)
	}
	logText, err := os.ReadFile(obs.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	_, exitSummary, _ := strings.Cut(string(logText), "Observe mode summary")
	if !strings.Contains(exitSummary, "would create load-balancer "+p.lbName) || !strings.Contains(exitSummary, "would delete node "+gone) {
		t.Errorf("exit summary lacks the planned changes:\n%s", exitSummary)
	}
	t.Logf("observer's plan:\n%s\nexit summary:%s", plan, exitSummary)
	// From the API server's own record: every write the observer sent was
	// a dry run, but for the questions it asks (authentication and
	// authorization reviews, its controllers' tokens), which store nothing.
	var notDry []write
	for _, w := range c.auditWrites(t, began, time.Now()) {
		if w.process == "stratus" && !w.dryRun && !storesNothing(w) {
			notDry = append(notDry, w)
		}
	}
	if len(notDry) != 0 {
		t.Errorf("the observer sent writes that were not dry runs: %s", writeSummary(notDry))
	}
}

// checkSteadyState waits for the observer to have looked at every Service,
// route and instance, and checks it planned and wrote nothing.
func (c *cluster) checkSteadyState(t *testing.T, obs, up *ccm, w *writes, services int) {
	t.Helper()
	ctx := c.ctx
	c.waitFor("the observer to look at everything", time.Minute, func(ctx context.Context) (bool, error) {
		text, err := obs.metrics(ctx)
		return err == nil && metricSum(text, "stratus_cloud_requests_total", `operation="ListRoutes"`, `result="success"`) >= 2 &&
			metricSum(text, "stratus_cloud_requests_total", `operation="PlanLoadBalancer"`) >= float64(services) &&
			metricSum(text, "stratus_cloud_requests_total", `operation="ListInstances"`) >= 1, nil
	}, obs, up)
	text, err := obs.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if page, err := obs.get(ctx, "/debug/observe"); err != nil || !strings.Contains(page, "0 planned changes") {
		t.Errorf("steady state: /debug/observe says %q (%v)", page, err)
	}
	if n := metricSum(text, planned); n != 0 {
		t.Errorf("steady state: observer planned %v changes:\n%s", n, grepLines(obs.LogFile, "planned change"))
	}
	stats, err := c.cloud.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"CreateLoadBalancer", "UpdateLoadBalancer", "DeleteLoadBalancer", "CreateRoute", "DeleteRoute"} {
		if n := stats.Count(op); n != 0 {
			t.Errorf("steady state: %d %s calls", n, op)
		}
	}
	if changes, _ := w.end(); len(changes) != 0 {
		t.Errorf("steady state: Node or Service writes: %s", summary(changes))
	}
	if h, _, _ := c.lease(ctx, mainLease); strings.Contains(h, "observer") {
		t.Errorf("the observer took the lease")
	}
}

// storesNothing tells whether a "create" only asks the API server a
// question: a token or access review, or a ServiceAccount token.
func storesNothing(w write) bool {
	res, _, _ := strings.Cut(w.what, " ")
	return w.verb == "create" && (strings.HasSuffix(res, "reviews") || res == "serviceaccounts/token")
}

// chartKubeconfig installs the chart's RBAC for every controller and
// returns a kubeconfig holding only the daemon's ServiceAccount token.
func (c *cluster) chartKubeconfig() string {
	c.t.Helper()
	rbac, err := deploy.Manifest(deploy.AllControllersRBAC)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := localcluster.InstallRBAC(c.ctx, c.env.Config, rbac); err != nil {
		c.t.Fatal(err)
	}
	// The controllers' ServiceAccounts exist in the cluster the observer
	// joins, as kube-controller-manager's and an incumbent's own
	// per-controller credentials leave them: the manifests no longer
	// declare them, and observe mode only plans a missing one's creation.
	for _, sa := range []string{"node-controller", "service-controller", "route-controller"} {
		_, err := c.cs.CoreV1().ServiceAccounts(deploy.Namespace).Create(c.ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: deploy.Namespace, Name: sa}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			c.t.Fatal(err)
		}
	}
	cfg, err := localcluster.ServiceAccountConfig(c.ctx, c.env.Config, deploy.Namespace, "cloud-controller-manager", time.Hour)
	if err != nil {
		c.t.Fatal(err)
	}
	path := filepath.Join(c.t.TempDir(), "kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, path); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// addUnmanagedNode registers a node kwok leaves alone, Ready, and returns
// its name.
func (c *cluster) addUnmanagedNode() string {
	c.t.Helper()
	name := fmt.Sprintf("node-%02d", len(c.nodes))
	c.addNodes(1, localcluster.NodeOptions{Unmanaged: true})
	if err := localcluster.SetReady(c.ctx, c.cs, name, corev1.ConditionTrue); err != nil {
		c.t.Fatal(err)
	}
	return name
}

// removeMachine terminates the node's instance and marks the node NotReady,
// as its kubelet would stop reporting.
func (c *cluster) removeMachine(node string) {
	c.t.Helper()
	all, err := c.cloud.ListAllInstances(c.ctx, lcclient.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, in := range all {
		if in.Name == node {
			if _, err := c.cloud.DeleteInstance(c.ctx, in.ID); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	if err := localcluster.SetReady(c.ctx, c.cs, node, corev1.ConditionFalse); err != nil {
		c.t.Fatal(err)
	}
}

// grepLines returns the lines of a log file that contain s.
func grepLines(path, s string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
