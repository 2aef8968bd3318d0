// Package servicelb benchmarks the service-lb-controller at scale against a
// real kube-apiserver and localcloud with a realistic API (20 ms latency,
// 50 requests/s).
//
//	go test -run '^$' -bench . ./test/bench/servicelb/
//
// Two figures, each measured against the floor the cloud's rate limit
// sets (localcloud requests made ÷ 50/s):
//  1. 300 LoadBalancer Services created at once: time until all have
//     ingress, and localcloud requests per Service;
//  2. 20 nodes joining within 2 s: time until all 300 load balancers
//     target them, and UpdateLoadBalancer calls per load balancer.
package servicelb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const (
	services     = 300
	initialNodes = 3
	joiningNodes = 20
	joinWindow   = 2 * time.Second

	cloudLatency = 20 * time.Millisecond
	cloudRate    = 50.0
	// cloudBurst is localcloud's default bucket size.
	cloudBurst = 10
	// requestBurst is the CCM side's per-request bucket: below the cloud's,
	// so that at the same rate the cloud never answers 429. Stratus'
	// --cloud-api-qps limits provider calls, and one call can be several
	// requests (localcloud's EnsureLoadBalancer is a lookup plus a create),
	// so a cloud's per-request quota is matched by pacing the provider's
	// HTTP client, as cloud SDKs do; the call limit stays at its default.
	requestBurst = 5

	maxRatio               = 1.5
	maxRequestsPerService  = 4.0
	maxUpdatesPerBalancers = 2
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(klog.Background())
	os.Exit(m.Run())
}

func BenchmarkServiceLB(b *testing.B) {
	for b.Loop() {
		runScenario(b)
	}
}

// countingLB records, per Service, the node count of the last successful
// call and the number of UpdateLoadBalancer calls, so progress is observed
// without spending the cloud's rate limit on polling.
type countingLB struct {
	cloudprovider.LoadBalancer
	mu      sync.Mutex
	nodes   map[types.UID]int
	updates map[types.UID]int
}

func (c *countingLB) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	st, err := c.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	if err == nil {
		c.mu.Lock()
		c.nodes[svc.UID] = len(nodes)
		c.mu.Unlock()
	}
	return st, err
}

func (c *countingLB) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	err := c.LoadBalancer.UpdateLoadBalancer(ctx, cluster, svc, nodes)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates[svc.UID]++
	if err == nil {
		c.nodes[svc.UID] = len(nodes)
	}
	return err
}

// reached counts the Services whose load balancer got want nodes.
func (c *countingLB) reached(want int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.nodes {
		if v == want {
			n++
		}
	}
	return n
}

func (c *countingLB) maxUpdates() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := 0
	for _, v := range c.updates {
		m = max(m, v)
	}
	return m
}

func runScenario(b *testing.B) {
	ctx := testbed.Context(b, 15*time.Minute)
	restCfg := startAPIServer(b)
	driverCfg := rest.CopyConfig(restCfg)
	driverCfg.QPS, driverCfg.Burst = 1000, 2000
	driver := kubernetes.NewForConfigOrDie(driverCfg)

	knobs := api.DefaultKnobs()
	knobs.Latency = api.Duration(cloudLatency)
	knobs.RateLimit = cloudRate
	knobs.RateBurst = cloudBurst
	knobs.Quotas.LoadBalancers = 1000
	lc := servicetest.StartCloud(b, knobs, servicetest.CloudOptions{
		// A /22 of loopback addresses outside the ranges the other tests'
		// clouds pick from (127.0.110-249.x, 127.1.x, 127.2.x).
		VIPPool: netip.MustParsePrefix(fmt.Sprintf("127.3.%d.0/22", 4*rand.IntN(60))),
		CallQPS: 0, CallBurst: 100, // Stratus' defaults: no ceiling, adaptive pacing
		RequestQPS: cloudRate, RequestBurst: requestBurst,
	})

	for i := range initialNodes {
		if _, _, err := servicetest.AddNode(ctx, driver, lc.Client, fmt.Sprintf("node-%02d", i), nil, false); err != nil {
			b.Fatal(err)
		}
	}
	lb, _ := lc.Cloud.LoadBalancer()
	counting := &countingLB{LoadBalancer: lb, nodes: map[types.UID]int{}, updates: map[types.UID]int{}}
	ctrlCfg := rest.CopyConfig(restCfg)
	ctrlCfg.QPS, ctrlCfg.Burst = 200, 300
	ctrl := servicetest.StartControllerWith(b, ctrlCfg, counting, nil, service.Config{Workers: service.DefaultWorkers})
	// The controller's caches sync before the clock starts.
	if err := ctrl.WaitForCacheSync(ctx); err != nil {
		b.Fatal(err)
	}

	createFigures(b, ctx, driver, lc.Client)
	nodeFigures(b, ctx, driver, lc.Client, counting)
}

// startAPIServer starts etcd and kube-apiserver as testbed does, with a
// Service IP range large enough for the scenario (envtest's default /24
// holds fewer than 300 Services).
func startAPIServer(b *testing.B) *rest.Config {
	env := &envtest.Environment{
		BinaryAssetsDirectory:    testbed.RequireBinaries(b, "kube-apiserver", "etcd"),
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	cfg, err := env.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	return cfg
}

func createFigures(b *testing.B, ctx context.Context, cs kubernetes.Interface, lc *lcclient.Client) {
	if err := lc.ResetStats(ctx); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	parallel(services, 20, func(i int) error {
		_, err := cs.CoreV1().Services("default").Create(ctx, lbService(i), metav1.CreateOptions{})
		return err
	}, b)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Services("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		n := 0
		for _, s := range list.Items {
			if len(s.Status.LoadBalancer.Ingress) > 0 {
				n++
			}
		}
		return n == services, nil
	})
	elapsed := time.Since(start)
	if err != nil {
		b.Fatalf("waiting for ingress: %v", err)
	}
	stats, err := lc.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	floor := time.Duration(float64(stats.Total) / cloudRate * float64(time.Second))
	perService := float64(stats.Total) / services
	ratio := elapsed.Seconds() / floor.Seconds()
	b.ReportMetric(elapsed.Seconds(), "create-s")
	b.ReportMetric(floor.Seconds(), "create-floor-s")
	b.ReportMetric(ratio, "create-ratio")
	b.ReportMetric(perService, "create-req/svc")
	b.Logf("create: %d Services got ingress in %v; localcloud requests %d (%.2f per Service, %s); floor %v; ratio %.2f",
		services, elapsed.Round(time.Millisecond), stats.Total, perService, byOp(stats), floor.Round(time.Millisecond), ratio)
	if ratio > maxRatio || perService > maxRequestsPerService {
		b.Errorf("create figures missed: ratio %.2f (max %.1f), %.2f requests per Service (max %.0f)", ratio, maxRatio, perService, maxRequestsPerService)
	}
}

func nodeFigures(b *testing.B, ctx context.Context, cs kubernetes.Interface, lc *lcclient.Client, counting *countingLB) {
	// The machines exist before their nodes register, as in a real scale-up;
	// creating them is not the controller's cost.
	reqs := make([]api.CreateInstanceRequest, joiningNodes)
	for i := range reqs {
		reqs[i] = api.CreateInstanceRequest{Name: fmt.Sprintf("join-%02d", i), Zone: "zone-a", Region: "region-1", Type: "small"}
	}
	insts, err := lc.BatchCreateInstances(ctx, reqs)
	if err != nil {
		b.Fatal(err)
	}
	if err := lc.ResetStats(ctx); err != nil {
		b.Fatal(err)
	}
	want := initialNodes + joiningNodes
	start := time.Now()
	for i, inst := range insts {
		if _, err := cs.CoreV1().Nodes().Create(ctx, servicetest.NewNode(inst, nil, false), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if i < len(insts)-1 {
			time.Sleep(joinWindow / joiningNodes)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
		return counting.reached(want) == services, nil
	})
	elapsed := time.Since(start)
	if err != nil {
		b.Fatalf("waiting for %d load balancers to reach %d nodes (%d did): %v", services, want, counting.reached(want), err)
	}
	stats, err := lc.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	floor := time.Duration(float64(stats.Total) / cloudRate * float64(time.Second))
	ratio := elapsed.Seconds() / floor.Seconds()
	maxUpdates := counting.maxUpdates()
	b.ReportMetric(elapsed.Seconds(), "nodes-s")
	b.ReportMetric(floor.Seconds(), "nodes-floor-s")
	b.ReportMetric(ratio, "nodes-ratio")
	b.ReportMetric(float64(maxUpdates), "nodes-max-updates/lb")
	b.Logf("nodes: %d joining nodes reached %d load balancers in %v; localcloud requests %d (%s); floor %v; ratio %.2f; UpdateLoadBalancer calls per load balancer max %d",
		joiningNodes, services, elapsed.Round(time.Millisecond), stats.Total, byOp(stats), floor.Round(time.Millisecond), ratio, maxUpdates)
	if ratio > maxRatio || maxUpdates > maxUpdatesPerBalancers {
		b.Errorf("node figures missed: ratio %.2f (max %.1f), %d updates per load balancer (max %d)", ratio, maxRatio, maxUpdates, maxUpdatesPerBalancers)
	}
	verifyBackends(b, ctx, lc, want)
}

// verifyBackends checks, after the clock stopped, that the cloud agrees.
func verifyBackends(b *testing.B, ctx context.Context, lc *lcclient.Client, want int) {
	lbs, err := lc.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: servicetest.ClusterName})
	if err != nil {
		b.Fatal(err)
	}
	if len(lbs) != services {
		b.Errorf("localcloud has %d load balancers, want %d", len(lbs), services)
	}
	for _, l := range lbs {
		if len(l.Backends) != want {
			b.Errorf("load balancer %s has %d backends, want %d", l.Name, len(l.Backends), want)
		}
	}
}

func byOp(s *api.Stats) string {
	out := ""
	for op, o := range s.Operations {
		out += fmt.Sprintf("%s=%d%v ", op, o.Total, o.ByCode)
	}
	return out
}

func lbService(i int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("svc-%03d", i)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "bench"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// parallel runs f(0..n-1) on workers goroutines.
func parallel(n, workers int, f func(int) error, b *testing.B) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
