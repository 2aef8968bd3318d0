package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/yaml"

	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/internal/explain"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster/realnode"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const (
	chartDir = "../../charts/stratus"
	// chartRelease is the release's name; the chart's objects are named
	// after it, its pods labelled with it.
	chartRelease = "stratus"
	// explainReader is the user the test binds the chart's explain-reader
	// role to, to ask each replica whether it leads.
	explainReader = "chart-explain-reader"
)

// TestChartOnRealNodes installs the chart with `helm install` into a
// cluster of two real nodes and no other cloud controller manager: the
// image `make image` builds, imported into each node's containerd under
// the chart's own image reference, runs as the Deployment's two pods, one
// per node, on the host network, under the chart's RBAC. Before the
// install the kubelets' Nodes stay tainted uninitialized; after it they
// are initialized, and the replica holding the Lease (asked on its node's
// secure port) is the one that initialized them. A LoadBalancer Service's
// VIP answers from a real pod. When the leading pod is deleted another
// replica takes the Lease and deletes the Service's load balancer.
func TestChartOnRealNodes(t *testing.T) {
	helm := filepath.Join(testbed.RequireBinaries(t, "helm"), "helm")
	c := startRealClusterWith(t, realClusterOptions{noStratus: true, cloudOnSlot: true, serviceAccountAdmission: true})
	ref, tarball := buildImage(t)

	nodes := map[string]*realnode.Node{}
	for i, zone := range []string{"zone-a", "zone-b"} {
		n, _ := c.startNode("real-"+strconv.Itoa(i), zone)
		if err := n.ImportImage(c.ctx, tarball); err != nil {
			t.Fatal(err)
		}
		nodes[n.Name] = n
	}
	// Registered, and nothing initializes them yet.
	for name := range nodes {
		reg := c.waitNode(name, "registered", func(*corev1.Node) bool { return true })
		if reg.Spec.ProviderID != "" || !hasTaintKey(reg, cloudproviderapi.TaintExternalCloudProvider) {
			t.Fatalf("node %s before the install: providerID %q, taints %v; want no CCM at work yet",
				name, reg.Spec.ProviderID, reg.Spec.Taints)
		}
	}

	c.helmInstall(helm, ref)
	t.Cleanup(func() { logChartPods(t, c.cs) })
	pods := c.waitChartPods(nodes)
	for name := range nodes {
		c.waitInitialized(name)
	}
	leader, standby := c.leadership(pods, "real-0")
	t.Logf("leader %s on %s, standby %s on %s", leader.Name, leader.Spec.NodeName, standby.Name, standby.Spec.NodeName)

	web := c.runPod("web")
	vip := c.loadBalancerVIP("web")
	want := fmt.Sprintf("hello from pod web on node %s\n", web.Spec.NodeName)
	c.poll("the load balancer answering from the pod", func(ctx context.Context) (bool, error) {
		line, err := readLine(ctx, net.JoinHostPort(vip, "80"))
		return err == nil && line == want, nil
	})

	c.failOver(leader)
}

// buildImage builds the image as `make image` does, for this machine's
// platform only (cross-compiling would cost minutes), tagged with the
// chart's default reference. It returns the reference and the
// docker-archive tarball.
func buildImage(t *testing.T) (ref, tarball string) {
	t.Helper()
	chart, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^appVersion: *(\S+)$`).FindSubmatch(chart)
	if m == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	ref = "ghcr.io/stratus-ccm/stratus:" + string(m[1])
	out := t.TempDir()
	cmd := exec.Command("go", "run", "./cmd/image", "-module-dir", "../..", "-package", "./cmd/stratus",
		"-alias", "cloud-controller-manager", "-entrypoint", "cloud-controller-manager",
		"-platforms", "linux/"+runtime.GOARCH, "-version", string(m[1]),
		"-ldflags", "-X github.com/stratus-ccm/stratus/internal/version.version="+string(m[1]), "-repository", "ghcr.io/stratus-ccm/stratus",
		"-tag", string(m[1]), "-out", out)
	cmd.Dir = "../../hack/dist"
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the image: %v\n%s", err, b)
	}
	tars, err := filepath.Glob(filepath.Join(out, "*.tar"))
	if err != nil || len(tars) != 1 {
		t.Fatalf("the image's docker-archive: %v %v", tars, err)
	}
	return ref, tars[0]
}

// helmInstall installs the chart with its defaults but for what this
// cluster needs: the image is there already (pull policy Never); the API
// server is on each node's loopback (a relay from the machine's), so the
// in-cluster config is pointed there as kubeadm-style clusters point a CCM
// that runs before kube-proxy at the control plane's address; localcloud's
// API is on the machine's address on the nodes' bridge; every controller
// runs, node IPAM giving the nodes the pod CIDRs their CNI uses.
func (c *realCluster) helmInstall(helm, ref string) {
	c.t.Helper()
	repo, tag, _ := strings.Cut(ref, ":")
	values := map[string]any{
		"image":       map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		"cloudConfig": map[string]any{"create": true, "data": c.cloudConfig},
		"clusterName": servicetest.ClusterName, "allocateNodeCIDRs": true, "clusterCIDR": realClusterCIDR,
		"configureCloudRoutes": true,
		"extraEnv": []map[string]string{{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
			{"name": "KUBERNETES_SERVICE_PORT", "value": strconv.Itoa(c.cp.APIServerPort)}},
		"explain": map[string]any{"readerRBAC": map[string]any{"subjects": []map[string]string{
			{"kind": "User", "name": explainReader, "apiGroup": "rbac.authorization.k8s.io"}}}},
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		c.t.Fatal(err)
	}
	file := filepath.Join(c.dir, "values.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.CommandContext(c.ctx, helm, "install", chartRelease, chartDir, "--namespace", "kube-system",
		"--kubeconfig", c.kubeconfig("helm-admin", "system:masters"), "--values", file)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(c.dir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(c.dir, "helm", "config"), "HELM_DATA_HOME="+filepath.Join(c.dir, "helm", "data"))
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("helm install: %v\n%s", err, out)
	}
}

// waitChartPods waits for the Deployment's two pods to run and be Ready,
// one on each real node, on its host network.
func (c *realCluster) waitChartPods(nodes map[string]*realnode.Node) []corev1.Pod {
	c.t.Helper()
	var pods []corev1.Pod
	last := "no pods"
	c.poll("the chart's pods running and ready on the real nodes", func(ctx context.Context) (bool, error) {
		list, err := c.cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + chartRelease})
		if err != nil {
			return false, nil
		}
		pods, last = list.Items, describePods(list.Items)
		return len(pods) == 2 && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return !podReady(&p) }), nil
	}, &last)
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		c.t.Errorf("both replicas on %s, want one per node", pods[0].Spec.NodeName)
	}
	for _, p := range pods {
		n := nodes[p.Spec.NodeName]
		if n == nil || p.Status.PodIP != n.IP.String() || !p.Spec.HostNetwork {
			c.t.Errorf("pod %s on %q with IP %s (host network %t), want a real node's address", p.Name, p.Spec.NodeName, p.Status.PodIP, p.Spec.HostNetwork)
		}
	}
	return pods
}

// leadership asks each replica, on its node's secure port, who it is and
// whether it leads: exactly one does, it is the Lease's holder, and its
// node controller is the one that initialized the Node name (the
// standby's did nothing).
// It returns the leading pod and the other.
func (c *realCluster) leadership(pods []corev1.Pod, name string) (leader, standby *corev1.Pod) {
	c.t.Helper()
	var answers [2]explain.Explanation
	last := ""
	c.poll("one replica leading", func(ctx context.Context) (bool, error) {
		for i := range pods {
			e, err := c.explainNode(ctx, &pods[i], name)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			answers[i] = e
		}
		last = fmt.Sprintf("%+v", answers)
		return answers[0].Leading != answers[1].Leading, nil
	}, &last)
	l, s := 0, 1
	if answers[1].Leading {
		l, s = 1, 0
	}
	if holder := c.leaseHolder(); holder != answers[l].Replica || answers[s].Leader != holder {
		c.t.Errorf("the Lease is held by %q; the leading replica is %q, the standby sees %q", holder, answers[l].Replica, answers[s].Leader)
	}
	// The leader's node controller synced the Node, calling the cloud; the
	// standby's controllers never ran, so it knows nothing of it.
	synced := slices.ContainsFunc(answers[l].Syncs, func(s explain.Sync) bool {
		return s.Controller == node.ControllerName && s.Result == explain.ResultSuccess
	})
	if !answers[l].Known || !synced || answers[l].CloudOpsTotal == 0 {
		c.t.Errorf("the leading replica has no record of initializing node %s: %+v", name, answers[l])
	}
	if answers[s].Known {
		c.t.Errorf("the standby has a record of node %s: %+v", name, answers[s])
	}
	return &pods[l], &pods[s]
}

// failOver deletes the leading pod: another replica (the standby, or the
// pod replacing the deleted one) takes the Lease and acts, deleting the
// load balancer of the Service the test then deletes.
func (c *realCluster) failOver(leader *corev1.Pod) {
	c.t.Helper()
	old := c.leaseHolder()
	if err := c.cs.CoreV1().Pods("kube-system").Delete(c.ctx, leader.Name, metav1.DeleteOptions{}); err != nil {
		c.t.Fatal(err)
	}
	last := ""
	c.poll("another replica taking the Lease", func(ctx context.Context) (bool, error) {
		holder := c.leaseHolder()
		list, err := c.cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + chartRelease})
		if err != nil || holder == old {
			return false, nil
		}
		for i, p := range list.Items {
			if p.Name == leader.Name || p.Status.PodIP == "" {
				continue
			}
			e, err := c.explainNode(ctx, &list.Items[i], "real-0")
			last = fmt.Sprintf("pod %s: %+v, %v; Lease holder %q", p.Name, e, err, holder)
			if err == nil && e.Leading && e.Replica == holder {
				return true, nil
			}
		}
		return false, nil
	}, &last)
	lbs, err := c.lc.Client.ListAllLoadBalancers(c.ctx, lcclient.ListOptions{Cluster: servicetest.ClusterName})
	if err != nil || len(lbs) != 1 {
		c.t.Fatalf("load balancers before the Service goes: %v %v", lbs, err)
	}
	if err := c.cs.CoreV1().Services("default").Delete(c.ctx, "web", metav1.DeleteOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.poll("the new leader deleting the load balancer and the Service", func(ctx context.Context) (bool, error) {
		lbs, err := c.lc.Client.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: servicetest.ClusterName})
		_, gerr := c.cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(lbs) == 0 && apierrors.IsNotFound(gerr), nil
	})
}

// explainNode asks the replica in pod, at its node's address and the
// chart's secure port, to explain the Node nodeName, as explainReader.
func (c *realCluster) explainNode(ctx context.Context, pod *corev1.Pod, nodeName string) (explain.Explanation, error) {
	var e explain.Explanation
	cfg, err := c.cp.UserConfig(explainReader)
	if err != nil {
		return e, err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return e, err
	}
	// The daemon's serving certificate is self-signed, as the kubelet's
	// probes accept it; the client certificate is what is checked here.
	tlsCfg.RootCAs, tlsCfg.InsecureSkipVerify = nil, true
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}}
	return explainAt(ctx, client, pod.Status.PodIP, nodeName)
}

// logChartPods logs, when the test failed, where the chart's pods are and
// what their containers wrote in their current and previous runs.
func logChartPods(t *testing.T, cs kubernetes.Interface) {
	if !t.Failed() {
		return
	}
	ctx := context.Background()
	list, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + chartRelease})
	if err != nil {
		t.Logf("the chart's pods: %v", err)
		return
	}
	t.Logf("the chart's pods: %s", describePods(list.Items))
	for _, p := range list.Items {
		for _, previous := range []bool{true, false} {
			log, err := cs.CoreV1().Pods("kube-system").GetLogs(p.Name, &corev1.PodLogOptions{Previous: previous}).DoRaw(ctx)
			t.Logf("pod %s on %s (previous run: %t): %v\n%s", p.Name, p.Spec.NodeName, previous, err, log)
		}
	}
}

// leaseHolder is the holder of the chart's Lease, or "".
func (c *realCluster) leaseHolder() string { return leaseHolderOf(c.ctx, c.cs) }

// leaseHolderOf is the holder of the Lease kube-system/cloud-controller-manager,
// or "" when there is none or it cannot be read.
func leaseHolderOf(ctx context.Context, cs kubernetes.Interface) string {
	l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func podReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// describePods says where each pod is and why it is not yet ready.
func describePods(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "%s on %q: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, s := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " (restarts %d, waiting %+v, terminated %+v)", s.RestartCount, s.State.Waiting, s.LastTerminationState.Terminated)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, " %s: %s", cond.Type, cond.Message)
			}
		}
		b.WriteString("; ")
	}
	return b.String()
}
