package migration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/controllers/route"
	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/observe"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// pending is the set of changes made while the incumbent is paused, each
// for a different controller.
type pending struct {
	lbName    string            // service: a new LoadBalancer Service's load balancer
	gone      string            // lifecycle: a NotReady node whose machine is gone
	lostRoute string            // route: a node whose route was lost in the cloud
	fresh     string            // cloud-node: a new node to initialize
	excluded  string            // service: a node now excluded from load balancers ...
	exclID    string            // ... and its instance
	lbs       map[string]string // the existing Services' load balancer names → Service
}

func (c *cluster) makePending(t *testing.T, gone string) *pending {
	t.Helper()
	ctx := c.ctx
	p := &pending{gone: gone, lostRoute: "node-00", excluded: "node-01", lbs: map[string]string{}}
	list, err := c.cs.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if list.Items[i].Spec.Type == corev1.ServiceTypeLoadBalancer {
			p.lbs[cloudprovider.DefaultLoadBalancerName(&list.Items[i])] = list.Items[i].Name
		}
	}
	c.createServices([]*corev1.Service{lbService("pending", corev1.ProtocolTCP, nil)})
	created, err := c.cs.CoreV1().Services(namespace).Get(ctx, "pending", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.lbName = cloudprovider.DefaultLoadBalancerName(created)
	c.removeMachine(gone)
	routes, err := c.cloud.ListRoutes(ctx, clusterName)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.InstanceName == p.lostRoute {
			if err := c.cloud.DeleteRoute(ctx, clusterName, r.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	p.fresh = fmt.Sprintf("node-%02d", len(c.nodes))
	c.addNodes(1, localcluster.NodeOptions{})
	excl, err := c.cs.CoreV1().Nodes().Patch(ctx, p.excluded, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+corev1.LabelNodeExcludeBalancers+`":"true"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.exclID = strings.TrimPrefix(excl.Spec.ProviderID, "localcloud://")
	return p
}

// by is the metric label and log field of a change planned for controller.
func by(controller string) string { return `controller="` + controller + `"` }

// checkPlanned waits for the observer to plan every pending change and
// checks the plan names each; it returns the plan's log lines.
func (p *pending) checkPlanned(t *testing.T, c *cluster, obs *ccm) string {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the observer's plan:\n%s", grepLines(obs.LogFile, "planned change"))
		}
	})
	c.waitFor("the observer to plan the pending changes", time.Minute, func(ctx context.Context) (bool, error) {
		text, err := obs.metrics(ctx)
		// Each change is planned for the controller that wanted it: the
		// cloud calls and the Node deletion carry no name of their own.
		if err != nil || metricSum(text, planned, by(service.ControllerName), `kind="load-balancer"`, `action="create"`) == 0 ||
			metricSum(text, planned, by(route.ControllerName), `kind="route"`, `action="create"`) == 0 ||
			metricSum(text, planned, by(nodelifecycle.ControllerName), `kind="nodes"`, `action="delete"`) == 0 ||
			metricSum(text, planned, by(node.ControllerName), `kind="nodes"`, `action="update"`) == 0 {
			return false, nil
		}
		return len(p.unplannedExclusions(grepLines(obs.LogFile, "planned change"))) == 0, nil
	}, obs)
	plan := grepLines(obs.LogFile, "planned change")
	if strings.Contains(plan, `diff="unknown`) {
		t.Errorf("the plan has changes it cannot tell:\n%s", plan)
	}
	if strings.Contains(plan, `controller="`+observe.UnknownController+`"`) {
		t.Errorf("the plan has changes of no known controller:\n%s", plan)
	}
	for _, want := range []string{p.lbName + " (service default/pending)", `object="` + p.gone + `"`, `kind="route" action="create" object="` + p.lostRoute + `"`} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan does not name %s:\n%s", want, plan)
		}
	}
	page, err := obs.get(c.ctx, "/debug/observe")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"would create load-balancer " + p.lbName, "would delete node " + p.gone, "would create route " + p.lostRoute} {
		if !strings.Contains(page, want) {
			t.Errorf("/debug/observe lacks %q:\n%s", want, page)
		}
	}
	if plannedFields(plan, by(node.ControllerName), `object="`+p.fresh+`"`)["spec.providerID"] == "" {
		t.Errorf("the plan does not initialize %s (providerID):\n%s", p.fresh, plan)
	}
	return plan
}

// unplannedExclusions lists the existing load balancers whose plan does not
// yet remove the excluded node's instance from the backends.
func (p *pending) unplannedExclusions(plan string) []string {
	var missing []string
	for lb, svc := range p.lbs {
		found := false
		for _, l := range strings.Split(plan, "\n") {
			_, removed, ok := strings.Cut(l, "-[")
			removed, _, _ = strings.Cut(removed, "]")
			found = found || ok && strings.Contains(l, `object="`+lb+" ") && strings.Contains(l, `action="update"`) && strings.Contains(removed, p.exclID)
		}
		if !found {
			missing = append(missing, svc)
		}
	}
	return missing
}

// checkIncumbentDid waits for the resumed incumbent to make the planned
// changes and compares what it wrote with what the observer planned.
func (p *pending) checkIncumbentDid(t *testing.T, c *cluster, up, obs *ccm, plan string) {
	t.Helper()
	c.waitFor("upstream to make the changes the observer planned", 2*time.Minute, func(ctx context.Context) (bool, error) {
		lbs, err := c.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{})
		if err != nil || !slices.ContainsFunc(lbs, func(lb api.LoadBalancer) bool { return lb.Name == p.lbName }) {
			return false, nil
		}
		for _, lb := range lbs {
			if slices.Contains(lb.Backends, p.exclID) {
				return false, nil
			}
		}
		routes, err := c.cloud.ListRoutes(ctx, clusterName)
		if err != nil || !slices.ContainsFunc(routes, func(r api.Route) bool { return r.InstanceName == p.lostRoute }) {
			return false, nil
		}
		if n, err := c.cs.CoreV1().Nodes().Get(ctx, p.fresh, metav1.GetOptions{}); err != nil || !initialized(n) {
			return false, nil
		}
		_, err = c.cs.CoreV1().Nodes().Get(ctx, p.gone, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}, up, obs)
	// The incumbent initialized the new node as the observer planned:
	// every planned field (providerID, each label) has the planned value.
	initPlan := plannedFields(plan, by(node.ControllerName), `object="`+p.fresh+`"`)
	n, err := c.cs.CoreV1().Nodes().Get(c.ctx, p.fresh, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := nodeFields(n)
	for field, want := range initPlan {
		if have, ok := got[field]; ok && have != want {
			t.Errorf("%s: the observer planned %s, the incumbent set %s", field, want, have)
		}
	}
	for field, have := range got {
		if _, ok := initPlan[field]; !ok && strings.HasPrefix(field, "metadata.labels.") && !strings.HasPrefix(field, "metadata.labels.kubernetes.io/") {
			t.Errorf("the incumbent set %s=%s, which the observer did not plan", field, have)
		}
	}
}

// plannedFields reads the "path: old → new" lines of the planned changes
// in the log lines holding every given fragment: path → new.
func plannedFields(plan string, fragments ...string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(plan, "\n") {
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(l, f)
		}
		_, diff, found := strings.Cut(l, ` diff="`)
		if !ok || !found {
			continue
		}
		diff = strings.TrimSuffix(diff, `"`)
		for _, d := range strings.Split(diff, "; ") {
			field, change, ok := strings.Cut(d, ": ")
			if _, to, ok2 := strings.Cut(change, " → "); ok && ok2 {
				out[field] = strings.ReplaceAll(to, `\"`, `"`)
			}
		}
	}
	return out
}

// nodeFields renders the fields a node initialization sets as the plan
// writes them: providerID and each label, JSON-quoted.
func nodeFields(n *corev1.Node) map[string]string {
	out := map[string]string{"spec.providerID": strconv.Quote(n.Spec.ProviderID)}
	for k, v := range n.Labels {
		out["metadata.labels."+k] = strconv.Quote(v)
	}
	return out
}
