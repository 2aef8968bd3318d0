package conformance_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/conformance"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// dropAfter is a transport that, once armed with n, lets n requests
// through and then loses the answer of every later one: the cloud does
// the work, the caller hears an error. It is the partial failure a timeout
// after a create produces.
type dropAfter struct {
	next  http.RoundTripper
	armed atomic.Bool
	left  atomic.Int64
}

var errDropped = errors.New("connection reset after the request was sent (injected)")

func (d *dropAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(r)
	if err != nil || !d.armed.Load() || d.left.Add(-1) >= 0 {
		return resp, err
	}
	_ = resp.Body.Close()
	return nil, errDropped
}

func (d *dropAfter) failAfter(n int) func() {
	d.left.Store(int64(n))
	d.armed.Store(true)
	return func() { d.armed.Store(false) }
}

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

// TestLocalcloudConforms runs the whole kit against the localcloud
// provider and a real localcloud over its HTTP API, with faults injected
// on the provider's connection and the cloud's own rate limit as the
// throttle: every check runs and passes.
func TestLocalcloudConforms(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	k := api.DefaultKnobs()
	k.LBProvisioningTime = api.Duration(100 * time.Millisecond)
	k.LBDeletionTime = 0
	srv, err := server.New(server.Config{StateDir: t.TempDir(), Knobs: &k, Pools: store.Pools{
		Internal: testbed.InstancePool(t),
		VIP:      testbed.VIPPool(t),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	admin, err := lcclient.New(srv.URL(), srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) *api.Instance {
		inst, err := admin.CreateInstance(ctx, api.CreateInstanceRequest{Name: name, Zone: "zone-a", Region: "region-1", Type: "small"})
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	withID, byName, deleted := mk("node-with-id"), mk("node-by-name"), mk("node-deleted")
	if _, err := admin.DeleteInstance(ctx, deleted.ID); err != nil {
		t.Fatal(err)
	}

	transport := &dropAfter{next: http.DefaultTransport}
	c, err := lcclient.New(srv.URL(), srv.Token(),
		lcclient.WithHTTPClient(&http.Client{Transport: transport, Timeout: 10 * time.Second}),
		lcclient.WithMaxRetries(1), lcclient.WithMaxRetryWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rep := conformance.Run(t, conformance.Config{
		// localcloud has every recommended behaviour too.
		Strict:      true,
		Provider:    lcprovider.NewWithClient(c, "conformance").WithEndpointTargets(),
		ClusterName: "conformance",
		Instances:   []*corev1.Node{node(withID.Name, lcprovider.ProviderID(withID.ID)), node(byName.Name, "")},
		Gone:        []*corev1.Node{node(deleted.Name, lcprovider.ProviderID(deleted.ID)), node("never-existed", "")},
		FailAfter:   transport.failAfter,
		Throttle: func() func() {
			if _, err := admin.UpdateConfig(ctx, api.KnobsPatch{RateLimit: ptr.To(0.2), RateBurst: ptr.To(1)}); err != nil {
				t.Fatalf("throttle localcloud: %v", err)
			}
			return func() {
				if _, err := admin.UpdateConfig(ctx, api.KnobsPatch{RateLimit: ptr.To(0.0)}); err != nil {
					t.Errorf("unthrottle localcloud: %v", err)
				}
			}
		},
	})
	if len(rep.NotRun) != 0 {
		t.Errorf("checks not run against localcloud: %v; every check applies to it", rep.NotRun)
	}
	if !slices.Contains(rep.Ran, "LoadBalancer/EndpointTargets") || len(rep.Ran) < 19 {
		t.Errorf("ran %d checks (%v), want all 19", len(rep.Ran), rep.Ran)
	}
	lbs, err := admin.ListAllLoadBalancers(context.Background(), lcclient.ListOptions{Cluster: "conformance"})
	if err != nil {
		t.Fatal(err)
	}
	for _, lb := range lbs {
		if lb.Status != api.LBDeleting {
			t.Errorf("load balancer %s (%s) left behind by the kit", lb.Name, lb.Status)
		}
	}
}
