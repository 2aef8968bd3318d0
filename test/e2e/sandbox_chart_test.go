package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/sandbox"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestSandboxChart follows docs/sandbox.md's "The chart on the real
// nodes" literally: `stratus sandbox --no-ccm` with two real nodes (and
// one kwok node), the image imported into each real node's containerd
// with the env file's ctr line, `helm install` with the values file the
// sandbox wrote. Before the install nothing initializes the Nodes; after
// it the chart's pods, on the real nodes under the chart's RBAC, do: every
// Node gets its providerID and loses the uninitialized taint, the Lease's
// holder is the replica that says it leads (asked in its pod, on its
// node's port 10258), and the demo Service hello-real gets a load
// balancer whose VIP answers from a real pod. Stopping the sandbox leaves
// nothing of it or its nodes.
func TestSandboxChart(t *testing.T) {
	helm := filepath.Join(testbed.RequireBinaries(t, "helm"), "helm")
	testbed.RequireBinaries(t, "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd", "ctr", "images/demo.tar")
	r := newSandboxRun(t)
	p := r.start(t, "sandbox.log", "--nodes=1", "--real-nodes=2", "--no-ccm")
	ctx := testbed.Context(t, 10*time.Minute)
	waitReady(ctx, t, p, r.state)
	cs := kubeClient(t, r.state)
	names := []string{"real-01", "real-02", kwokNode(ctx, t, cs)}

	for _, name := range names {
		// Ready does not wait for the kubelets' registration with --no-ccm.
		waitCond(ctx, t, "node "+name+" registered", 2*time.Minute, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		})
		n := getNode(ctx, t, cs, name)
		if n.Spec.ProviderID != "" || !hasTaintKey(n, cloudproviderapi.TaintExternalCloudProvider) {
			t.Fatalf("node %s before the install: providerID %q, taints %v; want no CCM at work yet", name, n.Spec.ProviderID, n.Spec.Taints)
		}
	}

	_, tarball := buildImage(t)
	// The documented steps, as a user types them after `make image`.
	steps := `. "$1" && for s in $STRATUS_REAL_NODE_SOCKETS; do "$STRATUS_CTR" --address "$s" -n k8s.io images import --platform linux/` +
		runtime.GOARCH + ` "$2"; done && "$3" install stratus "$4" -n kube-system --values "$STRATUS_CHART_VALUES"`
	helmHome := t.TempDir()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", steps, "sh", filepath.Join(r.state, "env"), tarball, helm, chartDir)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"), "HELM_DATA_HOME="+filepath.Join(helmHome, "data"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the documented import and helm install: %v\n%s", err, out)
	}
	t.Cleanup(func() { logChartPods(t, cs) })

	for _, name := range names {
		waitCond(ctx, t, "node "+name+" initialized by the chart's pod", 4*time.Minute, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil && n.Spec.ProviderID != "" && !hasTaintKey(n, cloudproviderapi.TaintExternalCloudProvider), nil
		})
	}
	pods := sandboxChartPods(ctx, t, cs)
	checkPodLeads(ctx, t, r.state, cs, pods)

	vip := waitVIP(ctx, t, cs, sandbox.DemoRealService)
	var line string
	waitCond(ctx, t, sandbox.DemoRealService+"'s VIP answering from a real pod", 2*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := sandbox.Probe(ctx, vip, 80)
		line = l
		return err == nil && strings.HasPrefix(l, "hello from pod "+sandbox.DemoRealService) && strings.Contains(l, "on node real-0"), nil
	})
	t.Logf("%s answered: %s", vip, strings.TrimSpace(line))

	stopAndCheck(t, p, r)
	checkNoRealNodes(t, p, "SIGTERM")
}

// kwokNode is the name of the one Node without the real-node label.
func kwokNode(ctx context.Context, t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "!" + sandbox.RealNodeLabel})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("kwok nodes: %v, %v; want one", list, err)
	}
	return list.Items[0].Name
}

func getNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sandboxChartPods waits for the chart's two pods to be Ready, each on a
// real node, on its host network.
func sandboxChartPods(ctx context.Context, t *testing.T, cs kubernetes.Interface) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitCond(ctx, t, "the chart's two pods ready on the real nodes", 3*time.Minute, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + chartRelease})
		if err != nil {
			return false, nil
		}
		pods = list.Items
		return len(pods) == 2 && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return !podReady(&p) }), nil
	})
	for _, p := range pods {
		n := getNode(ctx, t, cs, p.Spec.NodeName)
		if n.Labels[sandbox.RealNodeLabel] != "true" || !p.Spec.HostNetwork || p.Status.PodIP == "" {
			t.Errorf("pod %s on %s (labels %v), host network %t, IP %q; want a real node's network", p.Name, n.Name, n.Labels, p.Spec.HostNetwork, p.Status.PodIP)
		}
	}
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Errorf("both replicas on %s, want one per node", pods[0].Spec.NodeName)
	}
	return pods
}

// checkPodLeads asks each chart pod, on its node's secure port as the
// sandbox's admin (delegated authentication and authorization), who it
// is: exactly one leads, and it holds the Lease; so the Lease's holder is
// a pod, and no other controller manager runs.
// It returns the leading pod.
func checkPodLeads(ctx context.Context, t *testing.T, state string, cs kubernetes.Interface, pods []corev1.Pod) corev1.Pod {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The daemon's serving certificate is self-signed; the client's is
	// what is checked here.
	tlsCfg.RootCAs, tlsCfg.InsecureSkipVerify = nil, true
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	var leaders []string
	var leading corev1.Pod
	last := ""
	waitCond(ctx, t, "one chart pod leading and holding the Lease", time.Minute, func(ctx context.Context) (bool, error) {
		leaders = leaders[:0]
		for _, p := range pods {
			e, err := explainAt(ctx, client, p.Status.PodIP, "real-01")
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if e.Leading {
				leaders, leading = append(leaders, e.Replica), p
			}
		}
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false, nil
		}
		last = fmt.Sprintf("leading replicas %v, Lease holder %q", leaders, *l.Spec.HolderIdentity)
		return len(leaders) == 1 && leaders[0] == *l.Spec.HolderIdentity, nil
	})
	t.Logf("%s", last)
	return leading
}

// explainAt asks the replica listening at ip, on the chart's secure port,
// to explain the Node nodeName.
func explainAt(ctx context.Context, client *http.Client, ip, nodeName string) (explain.Explanation, error) {
	var e explain.Explanation
	u := url.URL{Scheme: "https", Host: net.JoinHostPort(ip, "10258"), Path: explain.Path,
		RawQuery: url.Values{"kind": {explain.KindNode}, "name": {nodeName}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return e, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return e, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return e, fmt.Errorf("%s: %s", u.String(), resp.Status)
	}
	return e, json.NewDecoder(resp.Body).Decode(&e)
}
