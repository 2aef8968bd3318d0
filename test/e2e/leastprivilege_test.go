package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// stratusUsers are the identities Stratus runs as: the daemon and
// upstream's controller ServiceAccounts (node-controller serves the node,
// lifecycle and IPAM controllers).
var stratusUsers = []string{
	"system:serviceaccount:kube-system:cloud-controller-manager",
	"system:serviceaccount:kube-system:node-controller",
	"system:serviceaccount:kube-system:service-controller",
	"system:serviceaccount:kube-system:route-controller",
}

// auditEvent is the part of an audit.k8s.io/v1 Event the test reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	RequestURI     string `json:"requestURI"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

func (e auditEvent) code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

func (e auditEvent) String() string {
	if e.ObjectRef == nil {
		return fmt.Sprintf("%s %s %s -> %d", e.User.Username, e.Verb, e.RequestURI, e.code())
	}
	o := e.ObjectRef
	return fmt.Sprintf("%s %s %s/%s (group %q) %s/%s -> %d", e.User.Username, e.Verb, o.Resource, o.Subresource, o.APIGroup, o.Namespace, o.Name, e.code())
}

// authorizedBy tells whether rule allowed e's request for (verb, resource,
// name); e must be by a subject of the rule and not refused.
func authorizedBy(r localcluster.Rule, e auditEvent, verb, resource, name string) bool {
	if e.Verb != verb || !slices.Contains(r.Subjects, e.User.Username) || e.code() == http.StatusForbidden {
		return false
	}
	if len(r.NonResourceURLs) > 0 {
		path, _, _ := strings.Cut(e.RequestURI, "?")
		return e.ObjectRef == nil && path == resource
	}
	o := e.ObjectRef
	if o == nil || !slices.Contains(r.APIGroups, o.APIGroup) || (r.Namespace != "" && o.Namespace != r.Namespace) {
		return false
	}
	res := o.Resource
	if o.Subresource != "" {
		res += "/" + o.Subresource
	}
	return res == resource && (name == "" || o.Name == name)
}

func readAudit(t *testing.T, path string) []auditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line: %v", err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLeastPrivilegeFromTheAuditLog runs the stratus binary as the chart's
// ServiceAccount with --use-service-account-credentials, under the chart's
// rendered RBAC only, through every controller's work, and then reads the
// API server's audit log: no request by a Stratus identity was refused,
// each controller spoke as its own ServiceAccount, Stratus never used
// another identity, and every rule of the chart was used, unless its
// "# rare:" comment names the rare path that needs it.
func TestLeastPrivilegeFromTheAuditLog(t *testing.T) {
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	env := testbed.Start(t, testbed.WithAuditLog(auditLog))
	env.StartKwok(t)
	ctx := testbed.Context(t, 8*time.Minute)
	rbac, err := deploy.Manifest(deploy.AllControllersRBAC)
	if err != nil {
		t.Fatal(err)
	}
	if err := localcluster.InstallRBAC(ctx, env.Config, rbac); err != nil {
		t.Fatal(err)
	}
	scraper := metricsScrapers(ctx, t, env)

	knobs := api.DefaultKnobs()
	knobs.LBProvisioningTime = api.Duration(200 * time.Millisecond)
	knobs.LBDeletionTime = api.Duration(200 * time.Millisecond)
	lc := servicetest.StartCloud(t, knobs, servicetest.CloudOptions{})
	port := testbed.FreePort(t)
	ccm := startUnderRBAC(ctx, t, env, lc, port)

	r := &run{t: t, ctx: ctx, cs: env.Clientset, lc: lc}
	r.nodes()
	r.loadBalancer()
	r.lifecycle()
	r.scrape(port, scraper)
	if err := ccm.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := ccm.Wait(time.Minute); err != nil || code != 0 {
		t.Fatalf("stratus after SIGTERM: exit %d, %v", code, err)
	}

	events := readAudit(t, auditLog)
	checkNoneRefused(t, events)
	rules, err := localcluster.Rules(rbac)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryRuleUsed(t, rules, events)
}

// startUnderRBAC runs stratus with a kubeconfig holding the daemon's
// ServiceAccount token and nothing else.
func startUnderRBAC(ctx context.Context, t *testing.T, env *testbed.Env, lc *servicetest.Cloud, port int) *testbed.Process {
	t.Helper()
	dir := t.TempDir()
	saCfg, err := localcluster.ServiceAccountConfig(ctx, env.Config, deploy.Namespace, "cloud-controller-manager", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(saCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cloudCfg := filepath.Join(dir, "cloud.yaml")
	content := "url: " + lc.Server.URL() + "\ntoken: " + lc.Server.Token() + "\nclusterName: " + servicetest.ClusterName + "\n"
	if err := os.WriteFile(cloudCfg, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return testbed.StartProcess(t, filepath.Join(dir, "stratus.log"), buildStratus(t), "controller-manager",
		"--cloud-provider=localcloud", "--cloud-config="+cloudCfg, "--kubeconfig="+kubeconfig,
		"--cluster-name="+servicetest.ClusterName, "--use-service-account-credentials",
		"--controllers=*,node-ipam-controller", "--allocate-node-cidrs", "--cluster-cidr=10.244.0.0/16", "--configure-cloud-routes",
		"--route-reconciliation-period=1s", "--node-monitor-period=1s",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), "--v=2")
}

// scrapers are the tokens of two ServiceAccounts: one the chart's
// metrics-reader role is bound to, and one with no role at all.
type scrapers struct{ reader, unbound string }

// metricsScrapers gives a ServiceAccount the chart's metrics-reader role
// and returns its token and that of a ServiceAccount without it.
func metricsScrapers(ctx context.Context, t *testing.T, env *testbed.Env) scrapers {
	t.Helper()
	monitoring, err := deploy.Manifest(deploy.Monitoring)
	if err != nil {
		t.Fatal(err)
	}
	const ns, name = "monitoring", "prometheus-k8s" // the chart's default reader subject
	if _, err := env.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := localcluster.InstallRBAC(ctx, env.Config, monitoring); err != nil {
		t.Fatal(err)
	}
	token := func(name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if _, err := env.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cfg, err := localcluster.ServiceAccountConfig(ctx, env.Config, ns, name, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.BearerToken
	}
	return scrapers{reader: token(name), unbound: token("no-metrics-role")}
}

// run drives every controller through its work.
type run struct {
	t   *testing.T
	ctx context.Context
	cs  kubernetes.Interface
	lc  *servicetest.Cloud
	ids map[string]string // node name → instance ID
}

// poll waits for cond; last, when given, describes the last attempt.
func (r *run) poll(what string, cond func(context.Context) (bool, error), last ...*string) {
	r.t.Helper()
	if err := wait.PollUntilContextTimeout(r.ctx, 100*time.Millisecond, 2*time.Minute, true, cond); err != nil {
		if len(last) > 0 {
			r.t.Fatalf("waiting for %s: %v; last: %s", what, err, *last[0])
		}
		r.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// nodes: one kwok node and two the test keeps NotReady for the lifecycle
// controller, all initialized, given pod CIDRs and routes.
func (r *run) nodes() {
	r.t.Helper()
	r.ids = map[string]string{}
	for _, n := range []struct {
		name      string
		unmanaged bool
	}{{"keep", false}, {"stop", true}, {"gone", true}} {
		inst, err := r.lc.Client.CreateInstance(r.ctx, api.CreateInstanceRequest{Name: n.name, Zone: "zone-a", Region: "region-1", Type: "small"})
		if err != nil {
			r.t.Fatal(err)
		}
		r.ids[n.name] = inst.ID
		if _, err := localcluster.CreateNode(r.ctx, r.cs, n.name, localcluster.NodeOptions{Unmanaged: n.unmanaged}); err != nil {
			r.t.Fatal(err)
		}
	}
	for name := range r.ids {
		var last string
		r.poll("node "+name+" initialized, with a pod CIDR", func(ctx context.Context) (bool, error) {
			n, err := r.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = fmt.Sprintf("providerID %q taints %v podCIDR %q", n.Spec.ProviderID, n.Spec.Taints, n.Spec.PodCIDR)
			uninitialized := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
			return n.Spec.ProviderID != "" && !uninitialized && n.Spec.PodCIDR != "", nil
		}, &last)
	}
	// kwok rewrites the conditions of the Node it keeps, so the route
	// controller's condition is read on the two the test keeps.
	for _, name := range []string{"stop", "gone"} {
		r.poll("NetworkUnavailable=False on "+name, func(ctx context.Context) (bool, error) {
			n, err := r.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil && routed(n), nil
		})
	}
	r.poll("a cloud route per node", func(ctx context.Context) (bool, error) {
		routes, err := r.lc.Client.ListRoutes(ctx, servicetest.ClusterName)
		return err == nil && len(routes) == len(r.ids), nil
	})
}

func routed(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionFalse
	})
}

// loadBalancer creates, updates and deletes a LoadBalancer Service.
func (r *run) loadBalancer() {
	r.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := r.cs.CoreV1().Services("default").Create(r.ctx, svc, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	r.poll("load balancer ingress", func(ctx context.Context) (bool, error) {
		s, err := r.cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(s.Status.LoadBalancer.Ingress) > 0, nil
	})
	// The controller writes the Service's conditions after its ingress: a
	// conflict is retried, as a user's client does.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := r.cs.CoreV1().Services("default").Get(r.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "alt", Port: 81, TargetPort: intstr.FromInt32(8081)})
		_, err = r.cs.CoreV1().Services("default").Update(r.ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.poll("load balancer with the second port", func(ctx context.Context) (bool, error) {
		lbs, err := r.lc.Client.ListAllLoadBalancers(ctx, lcclient.ListOptions{})
		return err == nil && len(lbs) == 1 && len(lbs[0].Listeners) == 2, nil
	})
	if err := r.cs.CoreV1().Services("default").Delete(r.ctx, "web", metav1.DeleteOptions{}); err != nil {
		r.t.Fatal(err)
	}
	r.poll("Service and load balancer gone", func(ctx context.Context) (bool, error) {
		_, err := r.cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		lbs, lerr := r.lc.Client.ListAllLoadBalancers(ctx, lcclient.ListOptions{})
		return apierrors.IsNotFound(err) && lerr == nil && len(lbs) == 0, nil
	})
}

// lifecycle: a NotReady node whose instance is stopped gets the shutdown
// taint; one whose instance is deleted is deleted.
func (r *run) lifecycle() {
	r.t.Helper()
	if _, err := r.lc.Client.StopInstance(r.ctx, r.ids["stop"]); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.lc.Client.DeleteInstance(r.ctx, r.ids["gone"]); err != nil {
		r.t.Fatal(err)
	}
	for _, name := range []string{"stop", "gone"} {
		if err := localcluster.SetReady(r.ctx, r.cs, name, corev1.ConditionFalse); err != nil {
			r.t.Fatal(err)
		}
	}
	r.poll("shutdown taint on the stopped node", func(ctx context.Context) (bool, error) {
		n, err := r.cs.CoreV1().Nodes().Get(ctx, "stop", metav1.GetOptions{})
		return err == nil && nodelifecycle.HasShutdownTaint(n), nil
	})
	r.poll("the deleted instance's node deleted", func(ctx context.Context) (bool, error) {
		_, err := r.cs.CoreV1().Nodes().Get(ctx, "gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// scrape reads /metrics as Prometheus would: with the reader's token it
// gets the metrics, and with a token the chart's metrics-reader role is not
// bound to it is refused, so that role is what let the reader in.
func (r *run) scrape(port int, s scrapers) {
	r.t.Helper()
	if code, body := r.getMetrics(port, s.reader); code != http.StatusOK || !strings.Contains(body, "stratus_cloud_requests_total") {
		r.t.Fatalf("/metrics with the reader's token: %d\n%.500s", code, body)
	}
	if code, body := r.getMetrics(port, s.unbound); code != http.StatusForbidden {
		r.t.Fatalf("/metrics with a token bound to no role: %d, want %d\n%.500s", code, http.StatusForbidden, body)
	}
}

func (r *run) getMetrics(port int, token string) (int, string) {
	r.t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the daemon serves a self-signed certificate
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+"/metrics", nil)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// checkNoneRefused: no Stratus identity was refused anything, each spoke,
// and nothing Stratus sent went under another identity.
func checkNoneRefused(t *testing.T, events []auditEvent) {
	t.Helper()
	spoke := map[string]int{}
	for _, e := range events {
		stratus := slices.Contains(stratusUsers, e.User.Username)
		switch {
		case stratus && e.code() == http.StatusForbidden:
			t.Errorf("refused: %s", e)
		case stratus:
			spoke[e.User.Username]++
		case strings.HasPrefix(e.UserAgent, "stratus-cloud-controller-manager"):
			t.Errorf("Stratus spoke as %s: %s", e.User.Username, e)
		}
	}
	for _, u := range stratusUsers {
		if spoke[u] == 0 {
			t.Errorf("no request by %s: the controller did not run as its ServiceAccount", u)
		}
	}
}

// checkEveryRuleUsed: each verb of each rule, on each of its resources
// (and names), authorized some request, unless the rule is marked rare.
func checkEveryRuleUsed(t *testing.T, rules []localcluster.Rule, events []auditEvent) {
	t.Helper()
	if len(rules) < 10 {
		t.Fatalf("only %d rules read from the chart's RBAC", len(rules))
	}
	rare := 0
	for _, r := range rules {
		if r.Rare != "" {
			rare++
			continue
		}
		if len(r.Subjects) == 0 {
			t.Errorf("rule bound to nobody: %s", r)
			continue
		}
		targets := append(slices.Clone(r.Resources), r.NonResourceURLs...)
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, verb := range r.Verbs {
			for _, res := range targets {
				for _, name := range names {
					if !slices.ContainsFunc(events, func(e auditEvent) bool { return authorizedBy(r, e, verb, res, name) }) {
						t.Errorf("unused: %s (verb %s on %s %s) by %v; remove it or mark it with %q naming the rare path", r, verb, res, name, r.Subjects, localcluster.RareMarker)
					}
				}
			}
		}
	}
	t.Logf("%d rules, %d marked rare, %d audit events", len(rules), rare, len(events))
}

// checkSandboxUnderChartRBAC: the sandbox's controller manager runs with
// --use-service-account-credentials and a kubeconfig that speaks as the
// chart's ServiceAccount, which may not patch Nodes. The sandbox's Nodes
// were initialized all the same, so the controllers' writes went through
// their own ServiceAccounts.
func checkSandboxUnderChartRBAC(ctx context.Context, t *testing.T, state string) {
	t.Helper()
	flags := strings.Fields(sandboxEnv(t, state)["STRATUS_CCM_FLAGS"])
	if !slices.Contains(flags, "--use-service-account-credentials") {
		t.Errorf("the sandbox's controller manager flags %v lack --use-service-account-credentials", flags)
	}
	var kubeconfig string
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--kubeconfig="); ok {
			kubeconfig = v
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("the controller manager's kubeconfig %q: %v", kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := who.Status.UserInfo.Username; u != stratusUsers[0] {
		t.Errorf("the sandbox's controller manager speaks as %q, want %q", u, stratusUsers[0])
	}
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if review.Status.Allowed {
		t.Errorf("the controller manager's own identity may patch Nodes: not the chart's least privilege")
	}
}
