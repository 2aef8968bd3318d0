package daemon_test

import (
	"bytes"
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
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/cmd/stratus/cli"
	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/cloudwrap"
	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestExplain: the daemon serves /debug/explain on its secure port behind
// delegated authentication (a token the API server rejects is 401) and
// authorization (a user without "get" on the URL is 403); for a Service
// blocked by the cloud's load balancer quota it names the quota, the failed
// attempts, the next retry and the cloud call that failed; for a Node whose
// instance the cloud does not know it says so, and for a NotReady Node whose
// instance is stopped the lifecycle controller's verdict; `stratus explain`
// prints it. The Service's LoadBalancerServing condition says the quota and
// the retry time, and raising the quota serves it without a restart.
func TestExplain(t *testing.T) {
	env := testbed.Start(t)
	knobs := api.DefaultKnobs()
	knobs.Quotas.LoadBalancers = 0
	lc := servicetest.StartCloud(t, knobs, servicetest.CloudOptions{})
	ctx := testbed.Context(t, 3*time.Minute)
	cs := env.Clientset
	port := startExplainDaemon(ctx, t, env, lc)

	if _, _, err := servicetest.AddNode(ctx, cs, lc.Client, "node-a", nil, false); err != nil {
		t.Fatal(err)
	}
	// A kubelet on a machine the cloud does not know keeps its Node Ready:
	// the lifecycle controller leaves it, the node controller cannot
	// initialize it.
	ghost := localcluster.NewNode("ghost", localcluster.NodeOptions{ProviderID: lcprovider.ProviderIDPrefix + "i-unknown", Unmanaged: true})
	if _, err := cs.CoreV1().Nodes().Create(ctx, ghost, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := localcluster.SetReady(ctx, cs, "ghost", corev1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	_, stopped, err := servicetest.AddNode(ctx, cs, lc.Client, "node-stopped", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Client.StopInstance(ctx, stopped.ID); err != nil {
		t.Fatal(err)
	}
	if err := localcluster.SetReady(ctx, cs, "node-stopped", corev1.ConditionFalse); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, lbService("default", "quota"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	query := explain.Path + "?kind=service&name=default/quota"
	if code, body := httpsGet(ctx, port, query, "garbage"); code != http.StatusUnauthorized {
		t.Errorf("explain with a token the API server rejects = %d %s, want 401", code, body)
	}
	if code, body := httpsGet(ctx, port, query, tokenFor(ctx, t, cs, "nobody", "")); code != http.StatusForbidden {
		t.Errorf("explain without RBAC = %d %s, want 403", code, body)
	}
	if code, body := httpsGet(ctx, port, query, tokenFor(ctx, t, cs, "metrics-only", "/metrics")); code != http.StatusForbidden {
		t.Errorf("explain with RBAC for /metrics only = %d %s, want 403", code, body)
	}
	token := tokenFor(ctx, t, cs, "explainer", explain.Path)

	svc := waitExplained(ctx, t, port, token, "kind=service&name=default/quota", func(ex explain.Explanation) bool {
		return len(ex.Syncs) > 0 && ex.Syncs[0].Attempts >= 1
	})
	s := svc.Syncs[0]
	if s.Controller != service.ControllerName || s.Result != explain.ResultError || !strings.Contains(s.LastError, "quota loadBalancers exceeded (limit 0)") ||
		s.NextRetry == nil || !strings.Contains(s.RetryWhy, "backoff") {
		t.Errorf("the quota-blocked Service's sync: %+v", s)
	}
	if !hasOp(svc.CloudOps, "EnsureLoadBalancer", cloudwrap.ResultError, "quota") {
		t.Errorf("no failed EnsureLoadBalancer among the Service's cloud operations: %+v", svc.CloudOps)
	}
	if !svc.Leading {
		t.Errorf("the only replica says it does not lead: %+v", svc)
	}

	n := waitExplained(ctx, t, port, token, "kind=node&name=ghost", func(ex explain.Explanation) bool {
		for _, s := range ex.Syncs {
			if s.Controller == node.ControllerName && s.LastError != "" {
				return true
			}
		}
		return false
	})
	for _, s := range n.Syncs {
		if s.Controller == node.ControllerName && (!strings.Contains(s.LastError, "not found") || s.NextRetry == nil) {
			t.Errorf("the unknown instance's node sync: %+v; want the instance not found and a retry", s)
		}
	}
	if len(n.Details) == 0 || !strings.Contains(strings.Join(n.Details[0].Lines, "\n"), "load balancers") {
		t.Errorf("no load balancer membership for the node: %+v", n.Details)
	}

	waitExplained(ctx, t, port, token, "kind=node&name=node-stopped", func(ex explain.Explanation) bool {
		return slices.ContainsFunc(ex.Details, func(d explain.Detail) bool {
			return d.Controller == nodelifecycle.ControllerName && slices.ContainsFunc(d.Lines, func(l string) bool { return strings.Contains(l, "shut down: tainted") })
		})
	})

	for args, wants := range map[[2]string][]string{
		{"service", "default/quota"}: {"service default/quota", service.ControllerName, "quota loadBalancers exceeded", "next retry:", "EnsureLoadBalancer error"},
		{"node", "ghost"}:            {"node ghost", node.ControllerName, "instance not found", "next retry:", "included in no load balancer"},
		{"node", "node-stopped"}:     {nodelifecycle.ControllerName + " says:", "NotReady; its instance is shut down: tainted node.cloudprovider.kubernetes.io/shutdown:NoSchedule"},
	} {
		var out bytes.Buffer
		root := cli.NewRootCommand()
		root.SetOut(&out)
		root.SetArgs([]string{"explain", args[0], args[1], "--server", "https://127.0.0.1:" + strconv.Itoa(port),
			"--token", token, "--insecure-skip-tls-verify"})
		if err := root.ExecuteContext(ctx); err != nil {
			t.Fatalf("stratus explain %s: %v\n%s", args, err, out.String())
		}
		t.Logf("stratus explain %s %s:\n%s", args[0], args[1], out.String())
		for _, want := range wants {
			if !strings.Contains(out.String(), want) {
				t.Errorf("stratus explain %s output lacks %q:\n%s", args, want, out.String())
			}
		}
	}
	quotaLifted(ctx, t, cs, lc, port, token)
}

// quotaLifted: the quota-blocked Service says why in LoadBalancerServing
// (the quota's message and the next retry time); raising the quota in the
// cloud serves it at a retry, without a restart, and explain says so.
func quotaLifted(ctx context.Context, t *testing.T, cs kubernetes.Interface, lc *servicetest.Cloud, port int, token string) {
	t.Helper()
	svc, err := cs.CoreV1().Services("default").Get(ctx, "quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(svc.Status.Conditions, service.ConditionServing)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != service.ReasonQuotaExceeded ||
		!strings.Contains(c.Message, "quota loadBalancers exceeded (limit 0)") || !strings.Contains(c.Message, "next retry at ") {
		t.Errorf("the quota-blocked Service's %s condition: %+v; want False, %s, the quota's message and the retry time", service.ConditionServing, c, service.ReasonQuotaExceeded)
	}
	if _, err := lc.Client.UpdateConfig(ctx, api.KnobsPatch{Quotas: &api.QuotasPatch{LoadBalancers: ptr.To(10)}}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		svc, err = cs.CoreV1().Services("default").Get(ctx, "quota", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(svc.Status.Conditions, service.ConditionServing), nil
	})
	if err != nil {
		t.Fatalf("the Service is not served after the quota was raised: %v; conditions %+v", err, svc.Status.Conditions)
	}
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Errorf("%s=True without an ingress: %+v", service.ConditionServing, svc.Status)
	}
	ex := waitExplained(ctx, t, port, token, "kind=service&name=default/quota", func(ex explain.Explanation) bool {
		return len(ex.Syncs) > 0 && ex.Syncs[0].Result == explain.ResultSuccess
	})
	if s := ex.Syncs[0]; s.Attempts != 0 || s.NextRetry != nil || !strings.Contains(s.LastError, "quota") {
		t.Errorf("after the quota was raised: %+v; want a success that keeps the last error", s)
	}
}

// startExplainDaemon runs the node and service controllers against lc with
// the secure port on, and returns the port once it answers.
func startExplainDaemon(ctx context.Context, t *testing.T, env *testbed.Env, lc *servicetest.Cloud) int {
	t.Helper()
	cfgFile := filepath.Join(t.TempDir(), "cloud.conf")
	conf := fmt.Sprintf("url: %s\ntoken: %s\nclusterName: %s\n", lc.Server.URL(), lc.Server.Token(), servicetest.ClusterName)
	if err := os.WriteFile(cfgFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	port := testbed.FreePort(t)
	o := app.NewOptions()
	o.CloudProvider = lcprovider.ProviderName
	o.CloudConfig = cfgFile
	o.ClusterName = servicetest.ClusterName
	o.Kubeconfig = env.Kubeconfig
	o.LeaderElect = false
	o.SecureServing.BindPort = port
	o.Controllers = []string{service.ControllerName, node.ControllerName, nodelifecycle.ControllerName}
	reg := cloud.NewRegistry()
	if err := reg.Register(lcprovider.ProviderName, lcprovider.New); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- app.Run(runCtx, o, app.Deps{Providers: reg, Metrics: prometheus.NewRegistry(), SkipControllerNameValidation: true})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		code, _ := httpsGet(ctx, port, "/readyz", "")
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("the daemon's secure port never answered ready: %v", err)
	}
	return port
}

func waitExplained(ctx context.Context, t *testing.T, port int, token, query string, done func(explain.Explanation) bool) explain.Explanation {
	t.Helper()
	var ex explain.Explanation
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		code, body := httpsGet(ctx, port, explain.Path+"?"+query, token)
		if code != 0 {
			last = fmt.Sprintf("%d %s", code, body)
		}
		if code != http.StatusOK {
			return false, nil
		}
		ex = explain.Explanation{}
		if err := json.Unmarshal([]byte(body), &ex); err != nil {
			return false, fmt.Errorf("answer is not an explanation: %w: %s", err, body)
		}
		return done(ex), nil
	})
	if err != nil {
		t.Fatalf("explain %s: %v; last answer: %s", query, err, last)
	}
	return ex
}

func hasOp(ops []explain.CloudOp, op, result, errPart string) bool {
	for _, o := range ops {
		if o.Operation == op && o.Result == result && strings.Contains(o.Error, errPart) {
			return true
		}
	}
	return false
}

// tokenFor returns a token of a new ServiceAccount name, allowed to GET the
// non-resource URL url when one is given.
func tokenFor(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, url string) string {
	t.Helper()
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if url != "" {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{url}, Verbs: []string{"get"}}}}
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}}}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// httpsGet GETs path from the daemon's secure port, with a bearer token
// when one is given.
func httpsGet(ctx context.Context, port int, path, token string) (int, string) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the daemon serves a self-signed certificate
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
