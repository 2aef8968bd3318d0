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
	"k8s.io/client-go/util/retry"
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

// podCIDR is what kube-controller-manager allocates to the test's Node in
// every vendor's cluster (10.244.0.0/16 is hcloud's and Azure's
// --cluster-cidr).
const podCIDR = "10.244.7.0/24"

// outcome is what a controller manager did with a vendor's inputs.
type outcome struct {
	started []string
	// node is the initialized Node's providerID, zone, instance type and
	// the pod CIDRs the controller manager set, or "" where the args run
	// no node controller.
	node string
	// ccmPodCIDRs are the pod CIDRs the Node had before the test set
	// kube-controller-manager's: a cloud controller manager's allocation.
	ccmPodCIDRs string
	// routes are the double's routes once the Node has its pod CIDR, the
	// Node's name as NODE.
	routes string
	// initialized is what the provider's Initialize got from the client
	// builder.
	initialized profile.Initialized
	// events are the node controller's events on the Node it initialized,
	// as the API server stored them (core v1, under the vendor's RBAC).
	events string
	// serviceEvent is the service controller's EnsuredLoadBalancer event
	// on a LoadBalancer Service of its own: its source, reporting
	// controller and type.
	serviceEvent string
}

// TestVendorProfilesBesideUpstream runs each vendor manifest's arguments
// and env under the vendor's published RBAC, twice against one real API
// server: with upstream's app (bin/upstream-ccm) and with Stratus (a
// pkg/ccm binary), both linking the same vendor double
// (test/vendors/profile), both run under the vendor's binary name where
// its main sets flag defaults (DigitalOcean's and kube-vip's
// --cloud-provider), so the args run untouched. The Secrets the manifest
// refers to are created first; its env and Secret volumes are given to the
// process as a kubelet gives them to the container.
//
// The two must start the same controllers, initialize a Node the same way
// (and record the node controller's Synced event on it) with no pod CIDR
// of their own (kube-controller-manager allocates: the
// test sets one as it would), create the same routes for it where the args
// configure cloud routes and the provider has them, record the service
// controller's event on a LoadBalancer Service under the same source (what
// operators' event filters select on), and give the provider's Initialize
// a client of the same identity. With the vendor's
// required input taken away (a credential, the cloud config), both refuse
// to start with the provider's message. A difference fails unless
// docs/operations.md lists it; it lists one here: the exit code.
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
			createSecrets(ctx, t, env, c.secrets)
			ctr := vendorContainer(t, c.vendor, c.file)
			args, _ := inImage(ctr)
			pd := podFor(ctx, t, env, ctr, args)
			bins := map[string]string{"upstream": vendorBinary(t, c.vendor, filepath.Join(binDir, "upstream-ccm")), "stratus": vendorBinary(t, c.vendor, stratus)}
			if c.missing.message != "" {
				c.compareMissing(ctx, t, bins, pd)
			}
			upstream := c.outcome(ctx, t, env, "upstream", bins["upstream"], pd)
			ours := c.outcome(ctx, t, env, "stratus", bins["stratus"], pd)
			compareOutcomes(t, ours, upstream)
			t.Logf("both started %v; Node %q, event %q; routes %q; Service event %q; Initialize %+v", ours.started, ours.node, ours.events, ours.routes, ours.serviceEvent, ours.initialized)
		})
	}
}

func compareOutcomes(t *testing.T, ours, upstream outcome) {
	t.Helper()
	if !slices.Equal(ours.started, upstream.started) {
		t.Errorf("controllers started: Stratus %v, upstream %v", ours.started, upstream.started)
	}
	if ours.node != upstream.node {
		t.Errorf("Node initialized: Stratus %q, upstream %q", ours.node, upstream.node)
	}
	if ours.ccmPodCIDRs != "" || upstream.ccmPodCIDRs != "" {
		t.Errorf("pod CIDRs allocated by the cloud controller manager: Stratus %q, upstream %q; want none", ours.ccmPodCIDRs, upstream.ccmPodCIDRs)
	}
	if ours.routes != upstream.routes {
		t.Errorf("routes: Stratus %q, upstream %q", ours.routes, upstream.routes)
	}
	if ours.events != upstream.events {
		t.Errorf("events on the Node: Stratus %q, upstream %q", ours.events, upstream.events)
	}
	if ours.serviceEvent != upstream.serviceEvent {
		t.Errorf("the service controller's event on a Service: Stratus %q, upstream %q", ours.serviceEvent, upstream.serviceEvent)
	}
	if ours.initialized != upstream.initialized {
		t.Errorf("the provider's Initialize: Stratus %+v, upstream %+v", ours.initialized, upstream.initialized)
	}
	if ours.initialized.Error != "" {
		t.Errorf("the provider's Initialize failed: %s", ours.initialized.Error)
	}
}

// vendorBinary returns bin as the vendor's own binary where the vendor's
// main sets flag defaults (a symlink under its name: both mains take the
// vendor's defaults by the name they run under), else bin.
func vendorBinary(t *testing.T, vendor, bin string) string {
	t.Helper()
	v := vendorProfile(t, vendor)
	if v.Command == "" {
		return bin
	}
	link := filepath.Join(t.TempDir(), v.Command)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func vendorProfile(t *testing.T, vendor string) profile.Vendor {
	t.Helper()
	i := slices.IndexFunc(profile.Vendors(), func(v profile.Vendor) bool { return v.Name == vendor })
	if i < 0 {
		t.Fatalf("no vendor profile %q", vendor)
	}
	return profile.Vendors()[i]
}

// compareMissing runs both implementations with the case's input taken
// away: each must exit non-zero before leading, saying what the
// provider said. The exit codes differ as docs/operations.md lists:
// upstream's mains end with klog.Fatalf (255), Stratus returns the error
// (1).
func (c swap) compareMissing(ctx context.Context, t *testing.T, bins map[string]string, pd pod) {
	t.Helper()
	args := slices.DeleteFunc(slices.Clone(pd.args), func(a string) bool { return c.missing.dropArg != "" && strings.HasPrefix(a, c.missing.dropArg) })
	want := map[string]int{"upstream": 255, "stratus": 1}
	for _, impl := range []string{"upstream", "stratus"} {
		vars := map[string]string{}
		for k, v := range pd.env {
			vars[k] = v
		}
		for k, v := range c.missing.env {
			vars[k] = v
		}
		setProcessEnv(t, vars)
		port := testbed.FreePort(t)
		p := testbed.StartProcess(t, filepath.Join(t.TempDir(), impl+"-missing.log"), bins[impl],
			append(slices.Clone(args), "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))...)
		code, err := p.Wait(time.Minute)
		log, _ := os.ReadFile(p.LogFile)
		switch {
		case err != nil:
			t.Errorf("%s without its input: %v", impl, err)
		case code != want[impl]:
			t.Errorf("%s without its input exited %d, want %d:\n%s", impl, code, want[impl], log)
		case !strings.Contains(string(log), c.missing.message):
			t.Errorf("%s without its input does not say %q:\n%s", impl, c.missing.message, log)
		case len(startedControllers(p.LogFile)) > 0:
			t.Errorf("%s without its input started controllers %v", impl, startedControllers(p.LogFile))
		}
	}
	for k := range c.missing.env {
		t.Setenv(k, pd.env[k]) // empty where the pod does not set it: unset, as the vendors read it
	}
	if ctx.Err() != nil {
		t.Fatal(ctx.Err())
	}
}

// outcome runs one implementation with the pod's args and env until it
// has led, started its controllers, initialized its provider and (where
// its args run the node controller) a Node of its own, and routed the
// Node's pod CIDR where it runs the route controller; then stops it,
// deletes the Node and frees its Lease for the next.
func (c swap) outcome(ctx context.Context, t *testing.T, env *testbed.Env, impl, bin string, pd pod) outcome {
	t.Helper()
	state := t.TempDir()
	setProcessEnv(t, pd.env)
	t.Setenv(profile.StateDirEnv, state)
	port := testbed.FreePort(t)
	p := testbed.StartProcess(t, filepath.Join(t.TempDir(), impl+".log"), bin,
		append(slices.Clone(pd.args), "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))...)
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
	c.started(t, poll, p.LogFile, &out)
	poll("the provider initialized", func(context.Context) (bool, error) {
		rec, ok, err := profile.ReadInitialized(state)
		out.initialized = rec
		return ok, err
	})
	name := impl + "-worker"
	if _, err := localcluster.CreateNode(ctx, env.Clientset, name, localcluster.NodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if c.nodeManager {
		manageNode(ctx, t, env, name, vendorProfile(t, c.vendor).Provider)
	}
	if c.initializes || c.nodeManager {
		out.node = nodeInitialized(env, poll, name)
	}
	if c.initializes {
		out.events = syncedEvent(env, poll, name)
	}
	out.ccmPodCIDRs = allocatePodCIDR(ctx, t, env, name)
	c.routed(poll, state, name, &out)
	out.serviceEvent = loadBalancerEvent(ctx, t, env, poll, impl+"-web")
	out.started = startedControllers(p.LogFile)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(time.Minute); err != nil {
		t.Fatalf("%s after SIGTERM: %v", impl, err)
	}
	c.cleanUp(ctx, t, env, name)
	return out
}

// started waits for the controllers both log as they start them, after
// leading, in one loop: every vendor's args run the service controller,
// the lifecycle controller where the provider has instances and the route
// controller where the case expects routes.
func (c swap) started(t *testing.T, poll func(string, func(context.Context) (bool, error)), logFile string, out *outcome) {
	t.Helper()
	instances := vendorProfile(t, c.vendor).Instances
	poll("the lifecycle, service and route controllers started", func(context.Context) (bool, error) {
		out.started = startedControllers(logFile)
		return slices.Contains(out.started, "service-lb-controller") &&
			(!instances || slices.Contains(out.started, "cloud-node-lifecycle-controller")) &&
			(!c.routes || slices.Contains(out.started, "node-route-controller")), nil
	})
}

// nodeInitialized waits for the node controller to initialize the Node and
// returns what it set, the Node's name as NODE.
func nodeInitialized(env *testbed.Env, poll func(string, func(context.Context) (bool, error)), name string) string {
	var out string
	poll("node "+name+" initialized", func(ctx context.Context) (bool, error) {
		n, err := env.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider }) {
			return false, nil
		}
		out = strings.Join([]string{strings.Replace(n.Spec.ProviderID, name, "NODE", 1),
			n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelInstanceTypeStable], strings.Join(n.Spec.PodCIDRs, ",")}, " ")
		return true, nil
	})
	return out
}

// manageNode initializes the Node as a vendor's node manager does where
// its cloud controller manager runs no node controller (Azure's
// cloud-node-manager DaemonSet): providerID, addresses, no uninitialized
// taint.
func manageNode(ctx context.Context, t *testing.T, env *testbed.Env, name, provider string) {
	t.Helper()
	nodes := env.Clientset.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.ProviderID = provider + "://" + name
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
		n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelInstanceTypeStable] = "zone-1", "standard"
		if n, err = nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return err
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: profile.NodeInternalIP}, {Type: corev1.NodeHostName, Address: name}}
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("initialize node %s as the vendor's node manager: %v", name, err)
	}
}

// syncedEvent waits for the node controller's Synced event on the Node,
// which upstream's records once it has initialized it, and returns its
// source and type.
func syncedEvent(env *testbed.Env, poll func(string, func(context.Context) (bool, error)), name string) string {
	var out string
	poll("the node controller's Synced event on node "+name, func(ctx context.Context) (bool, error) {
		evs, err := env.Clientset.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + name + ",reason=Synced"})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		e := evs.Items[0]
		out = e.Source.Component + " " + e.Type + " " + e.Reason
		return true, nil
	})
	return out
}

// loadBalancerEvent creates a LoadBalancer Service and waits for the
// service controller's EnsuredLoadBalancer event on it, whose source
// operators' event filters and alerts select on; it returns the event's
// source, reporting controller and type.
func loadBalancerEvent(ctx context.Context, t *testing.T, env *testbed.Env, poll func(string, func(context.Context) (bool, error)), name string) string {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := env.Clientset.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out string
	poll("the service controller's EnsuredLoadBalancer event on Service "+name, func(ctx context.Context) (bool, error) {
		evs, err := env.Clientset.CoreV1().Events(svc.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Service,involvedObject.name=" + name + ",reason=EnsuredLoadBalancer"})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		e := evs.Items[0]
		out = e.Source.Component + " " + e.ReportingController + " " + e.Type
		return true, nil
	})
	return out
}

// allocatePodCIDR sets the Node's pod CIDR as kube-controller-manager's
// allocator does, unless it already has one, which it returns: that one a
// cloud controller manager allocated.
func allocatePodCIDR(ctx context.Context, t *testing.T, env *testbed.Env, name string) string {
	t.Helper()
	var allocated string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := env.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(n.Spec.PodCIDRs) > 0 {
			allocated = strings.Join(n.Spec.PodCIDRs, ",")
			return err
		}
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDR, []string{podCIDR}
		_, err = env.Clientset.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("set node %s's pod CIDR as kube-controller-manager: %v", name, err)
	}
	return allocated
}

// routed waits, where the case expects routes, for the double to hold a
// route to the Node's pod CIDR, and records the double's routes.
func (c swap) routed(poll func(string, func(context.Context) (bool, error)), state, name string, out *outcome) {
	poll("the routes", func(context.Context) (bool, error) {
		routes, err := profile.ReadRoutes(state)
		if err != nil {
			return false, err
		}
		var s []string
		for _, r := range routes {
			s = append(s, strings.Replace(r.Node, name, "NODE", 1)+"→"+r.CIDR)
		}
		out.routes = strings.Join(s, ",")
		return !c.routes || slices.Contains(s, "NODE→"+podCIDR), nil
	})
}

// cleanUp deletes the Node and the Lease an implementation used, so that
// the next one starts as the first did.
func (c swap) cleanUp(ctx context.Context, t *testing.T, env *testbed.Env, node string) {
	t.Helper()
	if err := env.Clientset.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if c.lease != "" {
		if err := env.Clientset.CoordinationV1().Leases("kube-system").Delete(ctx, c.lease, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
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
