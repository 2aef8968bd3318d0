// Package nodeinit measures the cloud-node-controller at scale: 1,000 nodes
// registered at once against a real API server, etcd and kwok, with
// localcloud at 20 ms per call and 50 requests/s, and the kube client at
// 200 QPS / 300 burst. Run it explicitly:
//
//	go test -run '^$' -bench 'BenchmarkInit1000$' -benchtime 1x ./test/bench/nodeinit/
//	go test -run '^$' -bench 'BenchmarkInit1000PerNode$' -benchtime 1x ./test/bench/nodeinit/
//
// It reports the time until every node is initialized, cloud calls and API
// writes per node, and the cost of one refresh period over the unchanged
// nodes.
package nodeinit

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/node/nodetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const nodes = 1000

// writeCounter counts mutating API requests passing through a transport.
type writeCounter struct {
	nodes, other atomic.Int64
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			if strings.Contains(r.URL.Path, "/nodes") {
				w.nodes.Add(1)

			} else {
				w.other.Add(1)
			}
		}
		return rt.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkInit1000 uses the list-all-instances extension.
func BenchmarkInit1000(b *testing.B) { benchInit(b, true) }

// BenchmarkInit1000PerNode is the fallback (upstream's behaviour): one
// InstanceMetadata call per Node, for comparison.
func BenchmarkInit1000PerNode(b *testing.B) { benchInit(b, false) }

func benchInit(b *testing.B, useLister bool) {
	env := testbed.Start(b)
	env.StartKwok(b)
	knobs := api.DefaultKnobs()
	knobs.Latency = api.Duration(20 * time.Millisecond)
	knobs.RateLimit, knobs.RateBurst = 50, 10
	lc := nodetest.StartCloud(b, &knobs, 3)
	ctx := testbed.Context(b, 10*time.Minute)
	names := nodetest.Names("bench", nodes)
	if _, err := lc.CreateInstances(ctx, names...); err != nil {
		b.Fatal(err)
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 200, 300
	writes := &writeCounter{}
	cfg.Wrap(writes.wrap)
	mgr := nodetest.NewManager(b, cfg)
	in, lister := lc.Instances(b)
	if !useLister {
		lister = nil
	}
	c, err := node.New(node.Deps{
		Deps:      kit.Deps{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(node.ControllerName), Registerer: prometheus.NewRegistry()},
		Instances: in,
		Lister:    lister,
	}, node.Config{Workers: 10})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.SetupWithManager(mgr); err != nil {
		b.Fatal(err)
	}
	if err := lc.Admin.ResetStats(ctx); err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	start := time.Now()
	created := registerNodes(ctx, b, env.Config, names)
	initialized := waitAllInitialized(ctx, b, mgr.GetClient().List)
	b.StopTimer()

	st, err := lc.Admin.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(created.Sub(start).Seconds(), "s-register")
	b.ReportMetric(initialized.Sub(start).Seconds(), "s-all-initialized")
	b.ReportMetric(float64(st.Total)/nodes, "cloud-calls/node")
	b.ReportMetric(float64(st.Operations["ListInstances"].Total), "ListInstances-requests")
	b.ReportMetric(float64(writes.nodes.Load())/nodes, "node-writes/node")
	b.ReportMetric(float64(writes.other.Load())/nodes, "event-writes/node")
	b.Logf("init: registered in %s, all initialized after %s; cloud %d calls (%v); node writes %d, other writes %d",
		created.Sub(start), initialized.Sub(start), st.Total, st.Operations, writes.nodes.Load(), writes.other.Load())

	// One refresh period over the 1,000 unchanged nodes.
	if err := lc.Admin.ResetStats(ctx); err != nil {
		b.Fatal(err)
	}
	nw, ow := writes.nodes.Load(), writes.other.Load()
	res, err := c.Refresh(ctx)
	if err != nil {
		b.Fatal(err)
	}
	st, err = lc.Admin.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Total), "refresh-cloud-calls")
	b.ReportMetric(float64(writes.nodes.Load()-nw), "refresh-node-writes")
	b.Logf("refresh: %+v; cloud %d calls; node writes %d, other writes %d", res, st.Total, writes.nodes.Load()-nw, writes.other.Load()-ow)
}

// registerNodes creates the nodes as kubelets would, concurrently, with a
// client of its own (not limited like the controller's).
func registerNodes(ctx context.Context, b *testing.B, base *rest.Config, names []string) time.Time {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	work := make(chan string)
	errs := make(chan error, len(names))
	for range 32 {
		wg.Go(func() {
			for name := range work {
				if _, err := localcluster.CreateNode(ctx, cs, name, localcluster.NodeOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return time.Now()
}

type listFunc func(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error

// waitAllInitialized polls the manager's cache (no API cost) until no
// node carries the uninitialized taint and every node has addresses.
func waitAllInitialized(ctx context.Context, b *testing.B, list listFunc) time.Time {
	for {
		var nl corev1.NodeList
		if err := list(ctx, &nl); err != nil {
			b.Fatal(err)
		}
		done := len(nl.Items) == nodes
		for i := range nl.Items {
			n := &nl.Items[i]
			if len(n.Status.Addresses) == 0 || hasUninitializedTaint(n) {
				done = false
				break
			}
		}
		if done {
			return time.Now()
		}
		select {
		case <-ctx.Done():
			b.Fatalf("nodes not initialized: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func hasUninitializedTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return true
		}
	}
	return false
}
