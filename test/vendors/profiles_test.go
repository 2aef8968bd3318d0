package vendors_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
	"github.com/stratus-ccm/stratus/test/vendors/profile"
)

// knownControllers are the controllers either implementation can start,
// by the names both log: upstream's app's four, and Stratus' node IPAM,
// which must stay off wherever upstream has none to start.
var knownControllers = []string{"cloud-node-controller", "cloud-node-lifecycle-controller", "service-lb-controller", "node-route-controller", "node-ipam-controller"}

// outcome is what a controller manager did with a vendor's inputs.
type outcome struct {
	started []string
	// node is the initialized Node's providerID, zone, instance type and
	// pod CIDRs, or "" where the args run no node controller.
	node string
}

// TestVendorProfilesBesideUpstream runs each vendor manifest's arguments
// (with the --cloud-provider kube-vip's and DigitalOcean's mains default), under the vendor's published RBAC, twice against one real API
// server: with upstream's app (bin/upstream-ccm) and with Stratus (a pkg/ccm
// binary), both linking the same vendor double (test/vendors/profile). The
// two must start the same controllers and initialize a Node the same way,
// with the same pod CIDRs (none: no vendor's args ask a cloud controller
// manager to allocate them). A difference fails unless docs/operations.md
// lists it; it lists none of these.
func TestVendorProfilesBesideUpstream(t *testing.T) {
	binDir := testbed.RequireBinaries(t, "kube-apiserver", "etcd", "upstream-ccm")
	stratus := buildVendorCCM(t)
	for _, c := range runnableSwaps() {
		t.Run(c.vendor+"/"+c.file, func(t *testing.T) {
			env := testbed.Start(t)
			ctx := testbed.Context(t, 4*time.Minute)
			if err := deploy.Apply(ctx, env.Config, vendorRBAC(t, c.vendor, c.rbac...), deploy.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			ctr := vendorContainer(t, c.vendor, c.file)
			args, _ := inImage(ctr)
			args = podEnvironment(ctx, t, env, ctr.ServiceAccountName, append(expand(t, args, c.env), c.added...))
			upstream := c.outcome(ctx, t, env, "upstream", filepath.Join(binDir, "upstream-ccm"), args)
			ours := c.outcome(ctx, t, env, "stratus", stratus, args)
			if !slices.Equal(ours.started, upstream.started) {
				t.Errorf("controllers started: Stratus %v, upstream %v", ours.started, upstream.started)
			}
			if ours.node != upstream.node {
				t.Errorf("Node initialized: Stratus %q, upstream %q", ours.node, upstream.node)
			}
			t.Logf("both started %v; Node %q", ours.started, ours.node)
		})
	}
}

// outcome runs one implementation with args until it has led, started its
// controllers and (where its args run the node controller) initialized a
// Node of its own, then stops it and frees its Lease for the next.
func (c swap) outcome(ctx context.Context, t *testing.T, env *testbed.Env, impl, bin string, args []string) outcome {
	t.Helper()
	port := testbed.FreePort(t)
	p := testbed.StartProcess(t, filepath.Join(t.TempDir(), impl+".log"), bin,
		append(slices.Clone(args), "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))...)
	poll := func(what string, cond func(ctx context.Context) (bool, error)) {
		t.Helper()
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if p.Exited() {
				log, _ := os.ReadFile(p.LogFile)
				return false, fmt.Errorf("%s exited:\n%s", impl, log)
			}
			return cond(ctx)
		})
		if err != nil {
			t.Fatalf("%s: %s: %v", impl, what, err)
		}
	}
	var out outcome
	// Both log each controller as it starts it, after leading, in one
	// loop; every vendor's args run the service controller, and the
	// lifecycle controller where the provider has instances (the route
	// controller skips itself in both: the doubles have no Routes).
	instances := slices.ContainsFunc(profile.Vendors(), func(v profile.Vendor) bool { return v.Name == c.vendor && v.Instances })
	poll("the lifecycle and service controllers started", func(context.Context) (bool, error) {
		out.started = startedControllers(p.LogFile)
		return slices.Contains(out.started, "service-lb-controller") && (!instances || slices.Contains(out.started, "cloud-node-lifecycle-controller")), nil
	})
	if c.initializes {
		name := impl + "-worker"
		if _, err := localcluster.CreateNode(ctx, env.Clientset, name, localcluster.NodeOptions{}); err != nil {
			t.Fatal(err)
		}
		poll("node "+name+" initialized", func(ctx context.Context) (bool, error) {
			n, err := env.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider }) {
				return false, nil
			}
			out.node = strings.Join([]string{strings.Replace(n.Spec.ProviderID, name, "NODE", 1),
				n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelInstanceTypeStable], strings.Join(n.Spec.PodCIDRs, ",")}, " ")
			return true, nil
		})
	}
	out.started = startedControllers(p.LogFile)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(time.Minute); err != nil {
		t.Fatalf("%s after SIGTERM: %v", impl, err)
	}
	if c.lease != "" {
		err := env.Clientset.CoordinationV1().Leases("kube-system").Delete(ctx, c.lease, metav1.DeleteOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// startedControllers reads from a log which of knownControllers the
// process started: Stratus logs "Controller started" controller="NAME",
// upstream's app Started "NAME".
func startedControllers(logFile string) []string {
	data, _ := os.ReadFile(logFile)
	var out []string
	for _, name := range knownControllers {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, `"Controller started"`) && strings.Contains(l, `controller="`+name+`"`) ||
				strings.Contains(l, `Started "`+name+`"`) || strings.Contains(l, `Started \"`+name+`\"`) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}
