// Package servicetest is the test bed shared by the service controller's
// end-to-end tests and its benchmark: an in-process localcloud, the
// localcloud provider behind Stratus' instrumented wrapper, nodes backed by
// localcloud instances, and the controller running in its own
// controller-runtime manager (so that a restart starts from an empty cache
// and an empty memory, as a new process would).
package servicetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/internal/cloudwrap"
	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/objcache"
	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/dataplane"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// ClusterName is the cluster the test bed's load balancers belong to.
const ClusterName = "servicetest"

// Cloud is a running localcloud with the provider pointed at it.
type Cloud struct {
	Server   *server.Server
	Client   *lcclient.Client
	Provider *lcprovider.Cloud
	// Cloud is the provider behind Stratus' instrumented wrapper.
	Cloud *cloudwrap.Cloud
	// endpointTargets: CloudOptions.EndpointTargets.
	endpointTargets bool
}

// RandomPools claims a /24 of internal addresses and one of VIPs for t, so
// that tests of other packages running at the same time on the same
// loopback do not collide.
func RandomPools(t testing.TB) store.Pools {
	return store.Pools{
		Internal: testbed.InstancePool(t),
		External: netip.MustParsePrefix("127.2.0.0/16"),
		VIP:      testbed.VIPPool(t),
	}
}

// CloudOptions shape the test cloud and the CCM side's client-side rate
// limits.
type CloudOptions struct {
	// VIPPool replaces the random /24 of VIPs (a benchmark needs more).
	VIPPool netip.Prefix
	// CallQPS and CallBurst configure Stratus' instrumented wrapper
	// (--cloud-api-qps/--cloud-api-burst): one token per provider call.
	CallQPS   float64
	CallBurst int
	// RequestQPS and RequestBurst, when set, pace the provider's HTTP
	// requests, as a cloud SDK's own limiter does. A provider call can
	// make several requests (localcloud's EnsureLoadBalancer: a lookup and
	// a create), so only a per-request limit can match a cloud's per-request
	// quota exactly.
	RequestQPS   float64
	RequestBurst int
	// Listen is the API's address, 127.0.0.1:0 if empty: a pod on a real
	// node reaches the cloud at the node slot's own address on the machine.
	Listen string
	// EndpointTargets lets the provider's load balancers target endpoints
	// (its endpointTargets config), and StartController hands the
	// controller the extension.
	EndpointTargets bool
	// Netns, when set, is the network namespace localcloud's load
	// balancers live in (listeners, dials, health checks): a test whose
	// targets are not the machine's loopback keeps their traffic there.
	Netns string
}

// StartCloud starts localcloud with knobs until t ends.
func StartCloud(t testing.TB, knobs api.Knobs, lim CloudOptions) *Cloud {
	t.Helper()
	pools := RandomPools(t)
	if lim.VIPPool.IsValid() {
		pools.VIP = lim.VIPPool
	}
	srv, err := server.New(server.Config{StateDir: t.TempDir(), Knobs: &knobs, Pools: pools, Listen: lim.Listen,
		DataPlane: dataplane.Options{Netns: lim.Netns}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c, err := lcclient.New(srv.URL(), srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	pc := c
	if lim.RequestQPS > 0 {
		// The same pacing as rateLimitQPS/rateLimitBurst in the provider config.
		if pc, err = lcclient.New(srv.URL(), srv.Token(), lcclient.WithRateLimit(lim.RequestQPS, lim.RequestBurst)); err != nil {
			t.Fatal(err)
		}
	}
	p := lcprovider.NewWithClient(pc, ClusterName)
	if lim.EndpointTargets {
		p = p.WithEndpointTargets()
	}
	w, err := cloudwrap.Instrument(p, cloudwrap.Options{QPS: lim.CallQPS, Burst: lim.CallBurst, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return &Cloud{Server: srv, Client: c, Provider: p, Cloud: w, endpointTargets: lim.EndpointTargets}
}

// Controller is a service controller running in its own manager.
type Controller struct {
	*service.Controller
	cache  crcache.Cache
	cancel context.CancelFunc
	done   chan error
}

// WaitForCacheSync returns once the manager's caches of Nodes and Services,
// which the controller reads, hold every existing object.
func (c *Controller) WaitForCacheSync(ctx context.Context) error {
	for _, obj := range []client.Object{&corev1.Node{}, &corev1.Service{}} {
		// GetInformer blocks until the informer has synced.
		if _, err := c.cache.GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("wait for the %T cache: %w", obj, err)
		}
	}
	return nil
}

// StartController builds a manager on restCfg and runs the controller in
// it, against c, until Stop or the end of t.
func StartController(t testing.TB, restCfg *rest.Config, c *Cloud, cfg service.Config) *Controller {
	t.Helper()
	lb, _ := c.Cloud.LoadBalancer()
	lister, _ := c.Cloud.LoadBalancerLister()
	var eps cloud.EndpointTargeter
	if c.endpointTargets {
		eps, _ = c.Cloud.EndpointTargeter()
	}
	return startController(t, restCfg, service.Deps{LoadBalancer: lb, Lister: lister, Endpoints: eps}, cfg)
}

// StartControllerWith is StartController with the cloud seams given
// directly (a benchmark wraps them to observe the calls).
func StartControllerWith(t testing.TB, restCfg *rest.Config, lb cloudprovider.LoadBalancer, lister cloud.LoadBalancerLister, cfg service.Config) *Controller {
	t.Helper()
	return startController(t, restCfg, service.Deps{LoadBalancer: lb, Lister: lister}, cfg)
}

// startController runs the controller with deps' cloud seams.
func startController(t testing.TB, restCfg *rest.Config, deps service.Deps, cfg service.Config) *Controller {
	t.Helper()
	opts, err := objcache.ManagerOptions(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = klog.Background()
	mgr, err := manager.New(restCfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = ClusterName
	}
	deps.Deps = kit.Deps{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(service.ControllerName), Registerer: prometheus.NewRegistry()}
	deps.APIReader = mgr.GetAPIReader()
	ctrl, err := service.New(deps, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &Controller{Controller: ctrl, cache: mgr.GetCache(), cancel: cancel, done: make(chan error, 1)}
	go func() { out.done <- mgr.Start(ctx) }()
	// As in the daemon: the controller joins a manager that already runs.
	if err := ctrl.SetupWithManager(mgr); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(out.Stop)
	return out
}

// Stop stops the controller and its manager and waits for them.
func (c *Controller) Stop() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.cancel = nil
	select {
	case err := <-c.done:
		// A manager stopped by its test ends with context.Canceled or nil.
		_ = err
	case <-time.After(time.Minute):
	}
}

// NewNode registers a node for an existing localcloud instance, the way
// the node controller leaves it: providerID localcloud://<id>, the
// instance's internal address, and (with kwok) kept Ready.
func NewNode(inst api.Instance, labels map[string]string, kwok bool) *corev1.Node {
	n := localcluster.NewNode(inst.Name, localcluster.NodeOptions{
		ProviderID: lcprovider.ProviderIDPrefix + inst.ID, Labels: labels, Unmanaged: !kwok,
	})
	n.Spec.Taints = nil // initialized
	return n
}

// AddNode creates a localcloud instance and its Node, with the node's
// addresses set from the instance.
func AddNode(ctx context.Context, cs kubernetes.Interface, lc *lcclient.Client, name string, labels map[string]string, kwok bool) (*corev1.Node, api.Instance, error) {
	inst, err := lc.CreateInstance(ctx, api.CreateInstanceRequest{Name: name, Zone: "zone-a", Region: "region-1", Type: "small"})
	if err != nil {
		return nil, api.Instance{}, fmt.Errorf("create instance %s: %w", name, err)
	}
	n, err := cs.CoreV1().Nodes().Create(ctx, NewNode(*inst, labels, kwok), metav1.CreateOptions{})
	if err != nil {
		return nil, *inst, fmt.Errorf("create node %s: %w", name, err)
	}
	// A merge patch, not an update: kwok writes the same Node's status
	// concurrently, and an update would lose that race now and then.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"addresses": []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: inst.Addresses.Internal},
		{Type: corev1.NodeHostName, Address: inst.Addresses.Hostname},
	}}})
	if err != nil {
		return nil, *inst, fmt.Errorf("set addresses of node %s: %w", name, err)
	}
	if n, err = cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return nil, *inst, fmt.Errorf("set addresses of node %s: %w", name, err)
	}
	return n, *inst, nil
}
