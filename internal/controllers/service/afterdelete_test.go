package service_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// gatedLB passes every call through to the real load balancer API and
// logs it; an armed gate holds the first UpdateLoadBalancer of one Service
// until released, so a test can act while that update is in flight.
type gatedLB struct {
	cloudprovider.LoadBalancer
	mu      sync.Mutex
	log     []string // "start <op> <name>" / "end <op> <name>"
	gateFor string
	entered chan struct{}
	release chan struct{}
}

func (g *gatedLB) note(what, op string, svc *corev1.Service) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.log = append(g.log, what+" "+op+" "+svc.Name)
}

func (g *gatedLB) calls() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.log)
}

func (g *gatedLB) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	g.note("start", "update", svc)
	defer g.note("end", "update", svc)
	g.mu.Lock()
	hold := svc.Name == g.gateFor
	if hold {
		g.gateFor = ""
	}
	g.mu.Unlock()
	if hold {
		close(g.entered)
		<-g.release
	}
	return g.LoadBalancer.UpdateLoadBalancer(ctx, cluster, svc, nodes)
}

func (g *gatedLB) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	g.note("start", "ensure", svc)
	defer g.note("end", "ensure", svc)
	return g.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, nodes)
}

func (g *gatedLB) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	g.note("start", "delete", svc)
	defer g.note("end", "delete", svc)
	return g.LoadBalancer.EnsureLoadBalancerDeleted(ctx, cluster, svc)
}

// TestNeverUpdateAfterDelete drives kubernetes/kubernetes#100846's
// interleaving: a node change's UpdateLoadBalancer is in flight when the
// Service is deleted. Upstream's node sync, working from its own list of
// Services, can finish (or start) that update after the load balancer was
// deleted and so recreate it. Here the update and the deletion of one
// Service are the same work item, which the queue never hands to two
// workers: the deletion waits for the update, and once the load balancer
// is deleted no later node change calls the cloud for that Service again.
func TestNeverUpdateAfterDelete(t *testing.T) {
	b := newBed(t)
	b.cfg.Workers = 4
	lb, _ := b.cloud.Cloud.LoadBalancer()
	lister, _ := b.cloud.Cloud.LoadBalancerLister()
	g := &gatedLB{LoadBalancer: lb, entered: make(chan struct{}), release: make(chan struct{})}
	b.addNode("node-a", nil)
	b.ctrl = servicetest.StartControllerWith(t, b.env.Config, g, lister, b.cfg)
	web := b.createService(webService("default", "web"))
	other := b.createService(webService("default", "other"))
	b.waitIngress("default", "web")
	b.waitIngress("default", "other")

	// A node joins; web's host update is held in flight.
	g.mu.Lock()
	g.gateFor = "web"
	g.mu.Unlock()
	b.addNode("node-b", nil)
	select {
	case <-g.entered:
	case <-b.ctx.Done():
		t.Fatal("no UpdateLoadBalancer for web after a node joined")
	}
	if err := b.cs.CoreV1().Services("default").Delete(b.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// While the update is held, the deletion must not start: four workers
	// are free, a node pass may run, yet web's key is busy. Two seconds
	// give them every chance; a deletion seen meanwhile fails the test.
	err := wait.PollUntilContextTimeout(b.ctx, 50*time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(g.calls(), "start delete web"), nil
	})
	if err == nil {
		t.Fatalf("the deletion started while the update was in flight: %v", g.calls())
	}
	close(g.release)
	b.waitGone("default", "web")
	b.waitNoLB(web)

	// Another node change after the deletion: other follows it, web is
	// never asked about again.
	b.addNode("node-c", nil)
	b.waitBackends(other, "node-a", "node-b", "node-c")
	calls := g.calls()
	deleted := slices.Index(calls, "end delete web")
	if deleted < 0 {
		t.Fatalf("no deletion of web: %v", calls)
	}
	if i := slices.Index(calls, "start delete web"); i < slices.Index(calls, "end update web") {
		t.Errorf("the deletion started before the update ended: %v", calls)
	}
	for _, c := range calls[deleted:] {
		if strings.HasSuffix(c, " web") && !strings.HasSuffix(c, "delete web") {
			t.Errorf("%q after web's load balancer was deleted: %v", c, calls)
		}
	}
	if lbs := b.lbsOf(web); slices.ContainsFunc(lbs, func(l api.LoadBalancer) bool { return l.Status != api.LBDeleting }) {
		t.Errorf("web's load balancer is back: %+v", lbs)
	}
}
