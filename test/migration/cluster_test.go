package migration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const (
	clusterName = "migration"
	namespace   = "default"
	region      = "local-1"
	clusterCIDR = "10.244.0.0/16"
	leaseNS     = "kube-system"
	mainLease   = "cloud-controller-manager"
)

// cluster is a control plane, kwok, a localcloud with its data plane, and
// a stand-in for kube-proxy answering on every node port.
type cluster struct {
	t        *testing.T
	ctx      context.Context
	env      *testbed.Env
	cs       kubernetes.Interface
	cloud    *lcclient.Client
	cloudCfg string
	binDir   string
	nodes    map[string]string // name → internal IP
	resp     *responder
	token    string // see scrapeToken
	auditLog string // the API server's audit log: every request, with its user agent
}

func newCluster(t *testing.T, ctx context.Context) *cluster {
	t.Helper()
	binDir := testbed.RequireBinaries(t, "kube-apiserver", "etcd", "kwok", "stratus", "upstream-ccm")
	c := &cluster{t: t, ctx: ctx, binDir: binDir, nodes: map[string]string{}}
	c.auditLog = filepath.Join(t.TempDir(), "audit.log")
	c.env = testbed.Start(t, testbed.WithAuditLog(c.auditLog))
	c.cs = c.env.Clientset
	c.env.StartKwok(t)
	k := api.DefaultKnobs()
	k.LBProvisioningTime, k.LBDeletionTime = 0, 0
	dir := t.TempDir()
	// A random /24 for node addresses and VIPs keeps parallel packages
	// apart on loopback.
	srv, err := server.New(server.Config{StateDir: dir, Knobs: &k, Pools: store.Pools{
		Internal: testbed.InstancePool(t),
		External: netip.MustParsePrefix("127.2.0.0/16"),
		VIP:      testbed.VIPPool(t),
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, lcCtx := ktesting.NewTestContext(t)
	if err := srv.Start(lcCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if c.cloud, err = lcclient.New(srv.URL(), srv.Token(), lcclient.WithMaxRetries(5)); err != nil {
		t.Fatal(err)
	}
	c.cloudCfg = filepath.Join(dir, "cloud.yaml")
	cfg := "url: " + srv.URL() + "\ntoken: " + srv.Token() + "\nclusterName: " + clusterName + "\n"
	if err := os.WriteFile(c.cloudCfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c.resp = newResponder(t)
	return c
}

// addNodes creates n instances and registers their nodes as kubelets with
// --cloud-provider=external do, each with a pod CIDR as the
// kube-controller-manager's IPAM would have given it.
func (c *cluster) addNodes(n int, o localcluster.NodeOptions) {
	c.t.Helper()
	first := len(c.nodes)
	for i := first; i < first+n; i++ {
		name := fmt.Sprintf("node-%02d", i)
		in, err := c.cloud.CreateInstance(c.ctx, api.CreateInstanceRequest{
			Name: name, Zone: region + string(rune('a'+i%3)), Region: region, Type: "standard-2",
			Tags: map[string]string{"cluster": clusterName},
		})
		if err != nil {
			c.t.Fatal(err)
		}
		node := localcluster.NewNode(name, o)
		node.Spec.PodCIDR = fmt.Sprintf("10.244.%d.0/24", i)
		node.Spec.PodCIDRs = []string{node.Spec.PodCIDR}
		if _, err := c.cs.CoreV1().Nodes().Create(c.ctx, node, metav1.CreateOptions{}); err != nil {
			c.t.Fatal(err)
		}
		c.nodes[name] = in.Addresses.Internal
	}
}

// ccmArgs are the flags both implementations get: the same Lease, cluster,
// routes and serving setup, with /metrics open on loopback.
func (c *cluster) ccmArgs(port int, certDir string) []string {
	return []string{
		"--cloud-provider=localcloud",
		"--cloud-config=" + c.cloudCfg,
		"--kubeconfig=" + c.env.Kubeconfig,
		"--authentication-kubeconfig=" + c.env.Kubeconfig,
		"--authorization-kubeconfig=" + c.env.Kubeconfig,
		"--cluster-name=" + clusterName,
		"--leader-elect=true",
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + clusterCIDR,
		"--configure-cloud-routes=true",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--v=2",
	}
}

// ccm is one running controller manager.
type ccm struct {
	*testbed.Process
	name  string
	port  int
	token string
}

// start runs "stratus" (Stratus) or "upstream" (the upstream peer).
func (c *cluster) start(kind, name string, extra ...string) *ccm {
	c.t.Helper()
	port := testbed.FreePort(c.t)
	args := append(c.ccmArgs(port, c.t.TempDir()), extra...)
	bin := filepath.Join(c.binDir, "upstream-ccm")
	if kind == "stratus" {
		bin = filepath.Join(c.binDir, "stratus")
		args = append([]string{"controller-manager"}, args...)
	}
	p := testbed.StartProcess(c.t, filepath.Join(c.t.TempDir(), name+".log"), bin, args...)
	return &ccm{Process: p, name: name, port: port, token: c.scrapeToken()}
}

var insecure = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // loopback self-signed serving certificate

// scrapeToken returns a token the API server authenticates (TokenReview)
// and authorizes for GET /metrics, which Stratus' /metrics requires.
func (c *cluster) scrapeToken() string {
	c.t.Helper()
	if c.token != "" {
		return c.token
	}
	const name, ns = "scraper", "kube-system"
	cs := c.cs
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(c.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/debug/observe"}, Verbs: []string{"get"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(c.ctx, binding, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(c.ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	c.token = tr.Status.Token
	return c.token
}

// metrics returns the process' /metrics text.
func (m *ccm) metrics(ctx context.Context) (string, error) { return m.get(ctx, "/metrics") }

// get returns a page of the process' HTTPS server, with the scrape token.
func (m *ccm) get(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(m.port)+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	resp, err := insecure.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", path, resp.Status)
	}
	return string(b), err
}

// metricSum adds up the samples of a metric whose label set contains every
// given "k=\"v\"" fragment.
func metricSum(text, name string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// waitFor polls cond until it holds, failing the test with what on timeout.
func (c *cluster) waitFor(what string, timeout time.Duration, cond func(context.Context) (bool, error), alive ...*ccm) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range alive {
			if p.Exited() {
				return false, fmt.Errorf("%s exited (log %s)", p.name, p.LogFile)
			}
		}
		return cond(ctx)
	})
	if err != nil {
		c.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func initialized(n *corev1.Node) bool {
	if n.Spec.ProviderID == "" || len(n.Status.Addresses) == 0 {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return false
		}
	}
	return true
}

func (c *cluster) allNodesInitialized(ctx context.Context) (bool, error) {
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, nil
	}
	for i := range nodes.Items {
		if !initialized(&nodes.Items[i]) {
			return false, nil
		}
	}
	return len(nodes.Items) == len(c.nodes), nil
}

// lbService is a LoadBalancer Service; shape customises it.
func lbService(name string, proto corev1.Protocol, shape func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "p", Protocol: proto, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if shape != nil {
		shape(s)
	}
	return s
}

// services are the load balancers of the takeover: TCP and UDP, one with
// externalTrafficPolicy Local (health-checked node port) and one with
// source ranges.
func services() []*corev1.Service {
	return []*corev1.Service{
		lbService("tcp", corev1.ProtocolTCP, nil),
		lbService("udp", corev1.ProtocolUDP, nil),
		lbService("local", corev1.ProtocolTCP, func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}),
		lbService("ranges", corev1.ProtocolTCP, func(s *corev1.Service) {
			s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"}
		}),
	}
}

// createServices creates them and starts answering on their node ports.
func (c *cluster) createServices(svcs []*corev1.Service) {
	c.t.Helper()
	for _, s := range svcs {
		got, err := c.cs.CoreV1().Services(namespace).Create(c.ctx, s, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			c.t.Fatal(err)
		}
		c.resp.serve(c.nodes, got)
	}
}

// vips returns each LoadBalancer Service's ingress IP (empty when none).
func (c *cluster) vips(ctx context.Context) (map[string]string, error) {
	list, err := c.cs.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range list.Items {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		out[s.Name] = ""
		if len(s.Status.LoadBalancer.Ingress) > 0 {
			out[s.Name] = s.Status.LoadBalancer.Ingress[0].IP
		}
	}
	return out, nil
}

// lbs returns localcloud's load balancers: id → VIP.
func (c *cluster) lbs(ctx context.Context) (map[string]string, error) {
	all, err := c.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, lb := range all {
		out[lb.ID] = lb.VIP
	}
	return out, nil
}

// lease returns the holder of a Lease ("" when none or free).
func (c *cluster) lease(ctx context.Context, name string) (holder string, acquired time.Time, err error) {
	l, err := c.cs.CoordinationV1().Leases(leaseNS).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		acquired = l.Spec.AcquireTime.Time
	}
	return holder, acquired, nil
}
