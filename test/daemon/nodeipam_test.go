package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// ccm is one run of the daemon (app.Run) in this process.
type ccm struct {
	cancel context.CancelFunc
	done   chan error
}

// startCloud runs an in-process localcloud on pools (each test its own, so
// tests in parallel packages do not share addresses) and returns it with a
// --cloud-config file pointing at it.
func startCloud(t *testing.T, pools store.Pools) (*server.Server, string) {
	t.Helper()
	k := api.DefaultKnobs()
	srv, err := server.New(server.Config{StateDir: t.TempDir(), Knobs: &k, Pools: pools})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("url: %s\ntoken: %s\n", srv.URL(), srv.Token())), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, path
}

func daemonOptions(t *testing.T, env *testbed.Env, cloudConfig string, args ...string) *options.Options {
	t.Helper()
	o := app.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	base := []string{
		"--cloud-provider=" + lcprovider.ProviderName, "--cloud-config=" + cloudConfig,
		"--kubeconfig=" + env.Kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers=" + nodeipam.ControllerName, "--allocate-node-cidrs",
	}
	if err := fs.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	return o
}

func providers(t *testing.T) *cloud.Registry {
	t.Helper()
	reg := cloud.NewRegistry()
	if err := reg.Register(lcprovider.ProviderName, lcprovider.New); err != nil {
		t.Fatal(err)
	}
	return reg
}

func startCCM(t *testing.T, env *testbed.Env, cloudConfig string, args ...string) *ccm {
	t.Helper()
	o := daemonOptions(t, env, cloudConfig, args...)
	// The daemon runs until the test stops it, not until a caller's
	// context ends.
	ctx, cancel := context.WithCancel(t.Context())
	c := &ccm{cancel: cancel, done: make(chan error, 1)}
	go func() {
		c.done <- app.Run(ctx, o, app.Deps{Providers: providers(t), Metrics: prometheus.NewRegistry(), SkipControllerNameValidation: true})
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop ends the run and waits for a clean shutdown; stopping twice is fine.
func (c *ccm) stop(t *testing.T) {
	t.Helper()
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.cancel = nil
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("controller manager: %v", err)
		}
	case <-time.After(time.Minute):
		t.Error("controller manager did not stop within a minute")
	}
}

// waitPodCIDRs waits until every named node has want pod CIDRs and returns
// them by node.
func waitPodCIDRs(ctx context.Context, t *testing.T, cs kubernetes.Interface, want int, names ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || len(node.Spec.PodCIDRs) < want {
				return false, nil
			}
			if node.Spec.PodCIDR != node.Spec.PodCIDRs[0] {
				return false, fmt.Errorf("node %s: podCIDR %q is not podCIDRs[0] %q", n, node.Spec.PodCIDR, node.Spec.PodCIDRs[0])
			}
			out[n] = node.Spec.PodCIDRs
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pod CIDRs of %v: %v (have %v)", names, err, out)
	}
	return out
}

func createNodes(ctx context.Context, t *testing.T, cs kubernetes.Interface, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := localcluster.CreateNode(ctx, cs, n, localcluster.NodeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func deleteAllNodes(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	if err := cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkDisjoint fails when two allocations overlap or one lies outside the
// cluster CIDRs or inside the service range.
func checkDisjoint(t *testing.T, all map[string][]string, cluster []netip.Prefix, service netip.Prefix) {
	t.Helper()
	var seen []netip.Prefix
	owner := map[netip.Prefix]string{}
	for n, cidrs := range all {
		for i, s := range cidrs {
			p := netip.MustParsePrefix(s)
			if !cluster[i].Contains(p.Addr()) {
				t.Errorf("node %s podCIDRs[%d] = %s, not in %s", n, i, p, cluster[i])
			}
			if service.IsValid() && service.Overlaps(p) {
				t.Errorf("node %s got %s inside the service range %s", n, p, service)
			}
			for _, q := range seen {
				if q.Overlaps(p) {
					t.Errorf("node %s got %s overlapping %s of node %s", n, p, q, owner[q])
				}
			}
			seen = append(seen, p)
			owner[p] = n
		}
	}
}

func TestNodeIPAMController(t *testing.T) {
	env := testbed.Start(t)
	env.StartKwok(t)
	_, cloudConfig := startCloud(t, store.Pools{Internal: netip.MustParsePrefix("127.1.200.0/24"), VIP: netip.MustParsePrefix("127.0.200.0/24")})
	cs := env.Clientset
	ctx := testbed.Context(t, 5*time.Minute)

	t.Run("dual-stack allocation survives a restart", func(t *testing.T) {
		defer deleteAllNodes(ctx, t, cs)
		cluster := []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")}
		service := netip.MustParsePrefix("10.244.0.0/22")
		args := []string{"--cluster-cidr=10.244.0.0/16,fd00:10:244::/56", "--service-cluster-ip-range=" + service.String()}

		first := startCCM(t, env, cloudConfig, args...)
		createNodes(ctx, t, cs, "a1", "a2", "a3", "a4")
		before := waitPodCIDRs(ctx, t, cs, 2, "a1", "a2", "a3", "a4")
		checkDisjoint(t, before, cluster, service)
		first.stop(t)

		// A node joins while no controller runs; then a new one starts on
		// the same cluster and must not hand out the CIDRs it did not give.
		createNodes(ctx, t, cs, "b1")
		startCCM(t, env, cloudConfig, args...)
		createNodes(ctx, t, cs, "b2", "b3")
		after := waitPodCIDRs(ctx, t, cs, 2, "a1", "a2", "a3", "a4", "b1", "b2", "b3")
		for n, cidrs := range before {
			if strings.Join(after[n], ",") != strings.Join(cidrs, ",") {
				t.Errorf("node %s changed from %v to %v across the restart", n, cidrs, after[n])
			}
		}
		checkDisjoint(t, after, cluster, service)
	})

	t.Run("exhaustion is reported and clears when a node goes", func(t *testing.T) {
		defer deleteAllNodes(ctx, t, cs)
		startCCM(t, env, cloudConfig, "--cluster-cidr=10.99.0.0/23", "--node-cidr-mask-size-ipv4=24")
		createNodes(ctx, t, cs, "x1", "x2")
		waitPodCIDRs(ctx, t, cs, 1, "x1", "x2")
		createNodes(ctx, t, cs, "x3")
		waitEvent(ctx, t, cs, "x3", nodeipam.ReasonCIDRNotAvailable)
		if n, _ := cs.CoreV1().Nodes().Get(ctx, "x3", metav1.GetOptions{}); len(n.Spec.PodCIDRs) != 0 {
			t.Fatalf("x3 got %v from an exhausted range", n.Spec.PodCIDRs)
		}
		gone, _ := cs.CoreV1().Nodes().Get(ctx, "x1", metav1.GetOptions{})
		if err := cs.CoreV1().Nodes().Delete(ctx, "x1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitPodCIDRs(ctx, t, cs, 1, "x3")
		if got["x3"][0] != gone.Spec.PodCIDRs[0] {
			t.Errorf("x3 got %v, want the released %v", got["x3"], gone.Spec.PodCIDRs)
		}
	})

	t.Run("a node with a CIDR outside the cluster is reported", func(t *testing.T) {
		defer deleteAllNodes(ctx, t, cs)
		stray := localcluster.NewNode("stray", localcluster.NodeOptions{})
		stray.Spec.PodCIDR, stray.Spec.PodCIDRs = "192.168.7.0/24", []string{"192.168.7.0/24"}
		if _, err := cs.CoreV1().Nodes().Create(ctx, stray, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		startCCM(t, env, cloudConfig, "--cluster-cidr=10.98.0.0/16")
		waitEvent(ctx, t, cs, "stray", nodeipam.ReasonPodCIDROutsideCluster)
		createNodes(ctx, t, cs, "fine")
		waitPodCIDRs(ctx, t, cs, 1, "fine")
	})

	t.Run("a service range covering the cluster CIDR is a start error naming the flags", func(t *testing.T) {
		o := daemonOptions(t, env, cloudConfig, "--cluster-cidr=10.97.0.0/16", "--service-cluster-ip-range=10.0.0.0/8")
		err := app.Run(ctx, o, app.Deps{Providers: providers(t), Metrics: prometheus.NewRegistry(), SkipControllerNameValidation: true})
		if err == nil || !errors.Is(err, nodeipam.ErrOverlap) ||
			!strings.Contains(err.Error(), "--cluster-cidr=10.97.0.0/16") || !strings.Contains(err.Error(), "--service-cluster-ip-range=10.0.0.0/8") {
			t.Fatalf("Run error = %v, want ErrOverlap naming both flags", err)
		}
	})
}

func waitEvent(ctx context.Context, t *testing.T, cs kubernetes.Interface, node, reason string) corev1.Event {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": "Node", "involvedObject.name": node, "reason": reason}.AsSelector().String()
	var found corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil || len(evs.Items) == 0 {
			return false, nil
		}
		found = evs.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("no %s event on node %s: %v", reason, node, err)
	}
	return found
}
