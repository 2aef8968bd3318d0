package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/localcluster/realnode"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// realCluster is a control plane with kube-controller-manager and
// kube-scheduler, localcloud, Stratus and real nodes.
type realCluster struct {
	*run
	cp    *localcluster.ControlPlane
	nodes *realnode.Cluster
	dir   string
	// cloudConfig is what the localcloud provider's configuration file holds.
	cloudConfig string
}

// TestRealNodeSeedsFlow is the seeds' flow on a real kubelet: it registers
// tainted with --cloud-provider=external; Stratus initializes it
// (providerID, the provided node IP among its addresses, zone, region and
// instance type, taint removed) and gives it a pod CIDR, which its CNI
// uses; kube-scheduler places a pod there; a LoadBalancer Service's VIP
// answers from that pod through localcloud's data plane and kube-proxy;
// the nodes' namespaces route pod CIDRs as localcloud's route table (which
// Stratus' route controller fills) says, and a missing route breaks
// traffic to that node's pods; a pod on the other node reaches the load
// balancer's IP too; a stopped machine's node is tainted shutdown, a
// deleted one's Node goes.
func TestRealNodeSeedsFlow(t *testing.T) {
	c := startRealCluster(t)
	n, inst, node := c.addNode("real-0", "zone-a")
	if got := node.Labels[corev1.LabelTopologyZone]; got != "zone-a" {
		t.Errorf("zone label %q, want zone-a", got)
	}
	if got := node.Labels[corev1.LabelInstanceTypeStable]; got != "standard-2" {
		t.Errorf("instance type label %q, want standard-2", got)
	}
	if !slices.Contains(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: n.IP.String()}) {
		t.Errorf("addresses %v lack the provided node IP %s", node.Status.Addresses, n.IP)
	}

	pod := c.runPod("web")
	if pod.Spec.NodeName != n.Name {
		t.Fatalf("pod on %q, want %s", pod.Spec.NodeName, n.Name)
	}
	vip := c.loadBalancerVIP("web")
	want := fmt.Sprintf("hello from pod web on node %s\n", n.Name)
	c.poll("the load balancer answering from the pod", func(ctx context.Context) (bool, error) {
		line, err := readLine(ctx, net.JoinHostPort(vip, "80"))
		return err == nil && line == want, nil
	})

	other := c.checkRoutes(pod, n)
	if got := c.getFromPod("client", other.Name, "http://"+net.JoinHostPort(vip, "80")+"/"); got != want {
		c.t.Errorf("a pod on %s got %q from the load balancer, want %q", other.Name, got, want)
	}
	c.checkProxyProtocol(other)

	// The machine stops: its kubelet goes silent, the node goes NotReady
	// and Stratus taints it shutdown.
	if _, err := c.lc.Client.StopInstance(c.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	n.StopKubelet(c.ctx)
	c.waitNode(n.Name, "tainted shutdown", func(node *corev1.Node) bool {
		return hasTaintKey(node, cloudproviderapi.TaintNodeShutdown)
	})
	if _, err := c.lc.Client.DeleteInstance(c.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	c.poll("the deleted machine's Node to go", func(ctx context.Context) (bool, error) {
		_, err := c.cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// addNode starts a real node and its instance and waits until Stratus has
// initialized it and it is Ready.
func (c *realCluster) addNode(name, zone string) (*realnode.Node, *api.Instance, *corev1.Node) {
	c.t.Helper()
	n, inst := c.startNode(name, zone)
	return n, inst, c.waitInitialized(n.Name)
}

// startNode starts a real node and its instance, with the node's address.
func (c *realCluster) startNode(name, zone string) (*realnode.Node, *api.Instance) {
	c.t.Helper()
	n, err := c.nodes.AddNode(c.ctx, name)
	if err != nil {
		c.t.Fatal(err)
	}
	inst, err := c.lc.Client.CreateInstance(c.ctx, api.CreateInstanceRequest{Name: n.Name, Zone: zone, Region: "region-1",
		Type: "standard-2", InternalAddress: n.IP.String()})
	if err != nil {
		c.t.Fatal(err)
	}
	return n, inst
}

// waitInitialized waits until a CCM has initialized the Node (providerID,
// no uninitialized taint, a pod CIDR) and it is Ready.
func (c *realCluster) waitInitialized(name string) *corev1.Node {
	c.t.Helper()
	return c.waitNode(name, "initialized by Stratus and Ready", func(node *corev1.Node) bool {
		return node.Spec.ProviderID != "" && !hasTaintKey(node, cloudproviderapi.TaintExternalCloudProvider) &&
			node.Spec.PodCIDR != "" && ready(node)
	})
}

// checkRoutes: a second node reaches the pod on the first through the
// route to the first node's pod CIDR that Stratus put in localcloud's
// route table; without that route it does not. It returns the second node.
func (c *realCluster) checkRoutes(pod *corev1.Pod, podNode *realnode.Node) *realnode.Node {
	c.t.Helper()
	other, _, _ := c.addNode("real-1", "zone-b")
	var routes []realnode.Route
	c.poll("a cloud route per node", func(ctx context.Context) (bool, error) {
		var err error
		routes, err = c.cloudRoutes(ctx)
		return err == nil && len(routes) == 2, nil
	})
	if err := c.nodes.SetRoutes(c.ctx, routes); err != nil {
		c.t.Fatal(err)
	}
	podAddr := net.JoinHostPort(pod.Status.PodIP, "8080")
	want := fmt.Sprintf("hello from pod %s on node %s\n", pod.Name, podNode.Name)
	c.poll("the pod answering node "+other.Name, func(ctx context.Context) (bool, error) {
		line, err := readLineFrom(ctx, other, podAddr)
		return err == nil && line == want, nil
	})
	without := slices.DeleteFunc(slices.Clone(routes), func(r realnode.Route) bool { return r.NextHop == podNode.IP })
	if err := c.nodes.SetRoutes(c.ctx, without); err != nil {
		c.t.Fatal(err)
	}
	if line, err := readLineFrom(c.ctx, other, podAddr); err == nil {
		c.t.Errorf("without the route to %s's pods, %s still reached the pod: %q", podNode.Name, other.Name, line)
	}
	if err := c.nodes.SetRoutes(c.ctx, routes); err != nil {
		c.t.Fatal(err)
	}
	return other
}

// getFromPod runs the demo image's client mode on node: it GETs url until
// the demo's greeting comes back; its log, the body, is returned.
func (c *realCluster) getFromPod(name, node, url string) string {
	c.t.Helper()
	return c.getFromPodWant(name, node, url, "hello from")
}

// getFromPodWant is getFromPod until the body contains want.
func (c *realCluster) getFromPodWant(name, node, url, want string) string {
	c.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "get", Image: "stratus.local/demo:v1", ImagePullPolicy: corev1.PullNever,
				Args: []string{"-get", url, "-want", want, "-timeout", "60s"}}}},
	}
	if _, err := c.cs.CoreV1().Pods("default").Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	phase := corev1.PodPending
	c.poll("pod "+name+" finished", func(ctx context.Context) (bool, error) {
		p, err := c.cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			phase = p.Status.Phase
		}
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, err := c.cs.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(c.ctx)
	if phase != corev1.PodSucceeded || err != nil {
		c.t.Fatalf("pod %s on %s: %s (log: %s, %v)", name, node, phase, logs, err)
	}
	return string(logs)
}

// cloudRoutes reads the cluster's active routes from localcloud, each
// to the internal address of its instance.
func (c *realCluster) cloudRoutes(ctx context.Context) ([]realnode.Route, error) {
	list, err := c.lc.Client.ListRoutes(ctx, servicetest.ClusterName)
	if err != nil {
		return nil, err
	}
	var out []realnode.Route
	for _, r := range list {
		if r.State != api.RouteActive {
			continue
		}
		inst, err := c.lc.Client.GetInstance(ctx, r.InstanceID)
		if err != nil {
			return nil, err
		}
		dst, err1 := netip.ParsePrefix(r.DestinationCIDR)
		via, err2 := netip.ParseAddr(inst.Addresses.Internal)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		out = append(out, realnode.Route{Destination: dst, NextHop: via})
	}
	return out, nil
}

func readLineFrom(ctx context.Context, n *realnode.Node, addr string) (string, error) {
	conn, err := n.Dial(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	return bufio.NewReader(conn).ReadString('\n')
}

func startRealCluster(t *testing.T) *realCluster {
	return startRealClusterWith(t, realClusterOptions{})
}

// realClusterOptions says what startRealClusterWith leaves out or places
// elsewhere.
type realClusterOptions struct {
	// noStratus leaves Stratus out: the test runs it itself.
	noStratus bool
	// serviceAccountAdmission has the API server mount a ServiceAccount
	// token in every pod, as a real cluster does: a pod with the in-cluster
	// config (the chart's) needs it.
	serviceAccountAdmission bool
	// cloudOnSlot has localcloud's API listen on the machine's address on
	// the nodes' bridge, where a process in a node's namespace reaches it
	// (the machine's loopback is not the node's).
	cloudOnSlot bool
}

func startRealClusterWith(t *testing.T, o realClusterOptions) *realCluster {
	bin := testbed.RequireBinaries(t, "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
		"kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "cni/bridge", "images/pause.tar", "images/demo.tar")
	ctx := testbed.Context(t, 6*time.Minute)
	dir := t.TempDir()
	cp := &localcluster.ControlPlane{BinDir: bin, EtcdDataDir: filepath.Join(dir, "etcd"), CertDir: filepath.Join(dir, "pki"),
		APIServerArgs: []string{"--authorization-mode=Node", "--enable-admission-plugins=NodeRestriction",
			"--kubelet-preferred-address-types=InternalIP"}, ServiceAccountAdmission: o.serviceAccountAdmission}
	admin, err := cp.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	c := &realCluster{run: &run{t: t, ctx: ctx, cs: kubernetes.NewForConfigOrDie(admin)}, cp: cp, dir: dir}
	// Nodes that stop go NotReady in seconds rather than upstream's 50.
	testbed.StartProcess(t, filepath.Join(dir, "kcm.log"), filepath.Join(bin, "kube-controller-manager"),
		append(cp.ControllerManagerArgs(c.kubeconfig(localcluster.ControllerManagerUser), testbed.FreePort(t)),
			"--node-monitor-grace-period=8s")...)
	testbed.StartProcess(t, filepath.Join(dir, "scheduler.log"), filepath.Join(bin, "kube-scheduler"),
		localcluster.SchedulerArgs(c.kubeconfig(localcluster.SchedulerUser), testbed.FreePort(t))...)

	// The nodes' slot first: its VIP pool is the cloud's, so that pods
	// reach the load balancers as the machine does.
	nodes, err := realnode.Start(ctx, realnode.Config{BinDir: bin, Root: filepath.Join(dir, "nodes"),
		APIServerPort: cp.APIServerPort, Credentials: cp.UserConfig})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nodes.Stop(context.Background()); err != nil {
			t.Errorf("stop the real nodes: %v", err)
		}
	})
	c.nodes = nodes

	knobs := api.DefaultKnobs()
	knobs.LBProvisioningTime = api.Duration(100 * time.Millisecond)
	knobs.LBDeletionTime = api.Duration(100 * time.Millisecond)
	opts := servicetest.CloudOptions{VIPPool: nodes.VIPPool()}
	if o.cloudOnSlot {
		// The subnet's first address is the machine's, on the slot's bridge.
		opts.Listen = net.JoinHostPort(nodes.Subnet().Addr().Next().String(), "0")
	}
	c.lc = servicetest.StartCloud(t, knobs, opts)
	c.cloudConfig = "url: " + c.lc.Server.URL() + "\ntoken: " + c.lc.Server.Token() +
		"\nclusterName: " + servicetest.ClusterName + "\nkubeProxyHealthPort: 10256\n"
	if !o.noStratus {
		c.startStratus()
	}
	return c
}

// kubeconfig writes a kubeconfig for user in groups and returns its path.
func (c *realCluster) kubeconfig(user string, groups ...string) string {
	c.t.Helper()
	cfg, err := c.cp.UserConfig(user, groups...)
	if err != nil {
		c.t.Fatal(err)
	}
	path := filepath.Join(c.dir, user+".kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, path); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// startStratus runs Stratus on the machine, every controller on.
func (c *realCluster) startStratus() {
	c.t.Helper()
	cloudConfig := filepath.Join(c.dir, "cloud.yaml")
	if err := os.WriteFile(cloudConfig, []byte(c.cloudConfig), 0o600); err != nil {
		c.t.Fatal(err)
	}
	testbed.StartProcess(c.t, filepath.Join(c.dir, "stratus.log"), buildStratus(c.t), "controller-manager",
		"--cloud-provider=localcloud", "--cloud-config="+cloudConfig, "--kubeconfig="+c.kubeconfig("stratus-admin", "system:masters"),
		"--cluster-name="+servicetest.ClusterName, "--leader-elect=false",
		"--controllers=*,node-ipam-controller", "--allocate-node-cidrs=true", "--cluster-cidr="+realClusterCIDR, "--configure-cloud-routes=true",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(testbed.FreePort(c.t)))
}

// realClusterCIDR is the pods' network, which node IPAM divides.
const realClusterCIDR = "10.64.0.0/16"

// waitNode waits until the Node satisfies cond and returns it.
func (c *realCluster) waitNode(name, what string, cond func(*corev1.Node) bool) *corev1.Node {
	c.t.Helper()
	var node *corev1.Node
	last := "not registered"
	c.poll("node "+name+" "+what, func(ctx context.Context) (bool, error) {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node, last = n, fmt.Sprintf("taints %v, podCIDR %q, providerID %q", n.Spec.Taints, n.Spec.PodCIDR, n.Spec.ProviderID)
		return cond(n), nil
	}, &last)
	return node
}

// runPod runs the demo image, placed by kube-scheduler with no toleration:
// only an initialized, Ready node takes it. Its IP is from its node's pod
// CIDR, the node's CNI having used what Stratus' IPAM allocated.
func (c *realCluster) runPod(name string) *corev1.Pod {
	c.t.Helper()
	env := func(k, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "demo", Image: "stratus.local/demo:v1",
			ImagePullPolicy: corev1.PullNever, Env: []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")}}}},
	}
	if _, err := c.cs.CoreV1().Pods("default").Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	var got *corev1.Pod
	c.poll("pod "+name+" running", func(ctx context.Context) (bool, error) {
		p, err := c.cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		got = p
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", nil
	})
	node, err := c.cs.CoreV1().Nodes().Get(c.ctx, got.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	_, cidr, err := net.ParseCIDR(node.Spec.PodCIDR)
	if err != nil || !cidr.Contains(net.ParseIP(got.Status.PodIP)) {
		c.t.Errorf("pod IP %s outside node %s's pod CIDR %s", got.Status.PodIP, node.Name, node.Spec.PodCIDR)
	}
	return got
}

// loadBalancerVIP creates a LoadBalancer Service for the pod (traffic
// policy Local: only its node gets traffic) and returns its ingress IP.
func (c *realCluster) loadBalancerVIP(app string) string {
	c.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: app},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": app},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := c.cs.CoreV1().Services("default").Create(c.ctx, svc, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	var vip string
	c.poll("load balancer ingress", func(ctx context.Context) (bool, error) {
		s, err := c.cs.CoreV1().Services("default").Get(ctx, app, metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, nil
		}
		vip = s.Status.LoadBalancer.Ingress[0].IP
		return true, nil
	})
	return vip
}

// checkProxyProtocol: a load balancer with the proxy-protocol annotation
// reports ipMode Proxy, so kube-proxy leaves in-cluster clients of its VIP
// to it (KEP-1860): a pod on client reaches the web pod through the load
// balancer, and the demo reads client's address (its node's SNAT of pod
// traffic to the VIPs) from the PROXY protocol header. Had kube-proxy
// taken the pod straight to the endpoint, the demo would have seen the
// client pod's own address and no header.
func (c *realCluster) checkProxyProtocol(client *realnode.Node) {
	c.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-pp",
			Annotations: map[string]string{lcprovider.AnnotationProxyProtocol: "v2"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := c.cs.CoreV1().Services("default").Create(c.ctx, svc, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	var ing corev1.LoadBalancerIngress
	c.poll("web-pp's ingress", func(ctx context.Context) (bool, error) {
		s, err := c.cs.CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, nil
		}
		ing = s.Status.LoadBalancer.Ingress[0]
		return true, nil
	})
	if ing.IPMode == nil || *ing.IPMode != corev1.LoadBalancerIPModeProxy {
		c.t.Fatalf("web-pp's ingress %+v: want ipMode Proxy", ing)
	}
	url := "http://" + net.JoinHostPort(ing.IP, "80") + "/proxyclient"
	if got := c.getFromPodWant("pp-client", client.Name, url, client.IP.String()+"\n"); got != client.IP.String()+"\n" {
		c.t.Errorf("a pod on %s read %q as the client from web-pp's PROXY header, want its node %s", client.Name, got, client.IP)
	}
}

func readLine(ctx context.Context, addr string) (string, error) {
	conn, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	return bufio.NewReader(conn).ReadString('\n')
}

func hasTaintKey(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

func ready(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}
