package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func TestSyncCreate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"), node("n2"))
	h.mustSync("ns/web")

	svc := h.service("ns", "web")
	if !servicehelper.HasLBFinalizer(svc) {
		t.Error("finalizer not added")
	}
	vip := h.vip("ns/web")
	if got := svc.Status.LoadBalancer.Ingress; len(got) != 1 || got[0].IP != vip || got[0].IPMode == nil || *got[0].IPMode != corev1.LoadBalancerIPModeVIP {
		t.Errorf("ingress = %+v, want %s (the cloud's) with ipMode VIP", got, vip)
	}
	if got := h.nodesOf("ns/web"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("nodes = %v", got)
	}
	if log := h.lb.CallLog(); len(log) != 1 || !slices.Equal(log[0].Nodes, []string{"n1", "n2"}) {
		t.Errorf("calls = %+v, want one EnsureLoadBalancer given n1, n2 in order", log)
	}
	evs := h.events()
	if !hasEvent(evs, "Normal EnsuringLoadBalancer") || !hasEvent(evs, "Normal EnsuredLoadBalancer") {
		t.Errorf("events = %v", evs)
	}
}

func TestSyncUnchangedMakesNoCloudCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.mustSync("ns/web")
	h.events()
	writes := h.writes.Load()
	h.mustSync("ns/web")
	if n := len(h.calls()); n != 1 {
		t.Errorf("cloud calls = %v, want one EnsureLoadBalancer", h.calls())
	}
	if n := h.writes.Load() - writes; n != 0 {
		t.Errorf("API writes on an unchanged sync = %d, want none", n)
	}
	if evs := h.events(); len(evs) != 0 {
		t.Errorf("events on an unchanged sync: %v", evs)
	}
}

func TestSyncStatusRestoredWithoutCloudCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.mustSync("ns/web")
	svc := h.service("ns", "web")
	svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	h.updateStatus(svc)
	h.mustSync("ns/web")
	if got := h.service("ns", "web").Status.LoadBalancer.Ingress; len(got) != 1 {
		t.Errorf("ingress not restored: %+v", got)
	}
	if len(h.calls()) != 1 {
		t.Errorf("cloud calls = %v", h.calls())
	}
}

func TestSyncRetryErrorIsQuiet(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.lb.FailNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("provisioning", 2*time.Second))
	err := h.sync("ns/web")
	if d, ok := cloud.RetryAfter(err); !ok || d != 2*time.Second {
		t.Fatalf("err = %v, want a RetryError of 2s", err)
	}
	evs := h.events()
	if hasEvent(evs, "Warning") {
		t.Errorf("a RetryError produced a warning: %v", evs)
	}
	if !servicehelper.HasLBFinalizer(h.service("ns", "web")) {
		t.Error("finalizer must be on before the cloud is called")
	}
	h.mustSync("ns/web")
	evs = h.events()
	if hasEvent(evs, "Normal EnsuringLoadBalancer") {
		t.Errorf("the retry announced itself again: %v", evs)
	}
	if !hasEvent(evs, "Normal EnsuredLoadBalancer") {
		t.Errorf("events = %v", evs)
	}
}

func TestSyncBadInputWarns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.lb.FailNext("EnsureLoadBalancer", errors.New(`port "sctp" (5000/SCTP): protocol SCTP is not supported`))
	err := h.sync("ns/web")
	if err == nil {
		t.Fatal("want an error")
	}
	if _, ok := cloud.RetryAfter(err); ok {
		t.Fatal("a validation error must back off, not retry after a fixed delay")
	}
	evs := h.events()
	if !hasEvent(evs, "Warning SyncLoadBalancerFailed Error syncing load balancer:") {
		t.Errorf("events = %v", evs)
	}
	if len(h.service("ns", "web").Status.LoadBalancer.Ingress) != 0 {
		t.Error("status set despite the failure")
	}
}

// A provider that does not honour spec.loadBalancerIP must not ignore it
// in silence; one that does raises no warning.
func TestSyncLoadBalancerIPNotHonouredWarns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web", func(s *corev1.Service) { s.Spec.LoadBalancerIP = "10.9.9.9" }),
		lbService("ns", "ok", func(s *corev1.Service) { s.Spec.LoadBalancerIP = "10.0.0.1" }), node("n1"))
	// The cloud gives ns/ok the address it asks for, ns/web one of its own.
	h.lb.SetStatus("ns/ok", corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
		{IP: "10.0.0.1", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}})
	h.mustSync("ns/web")
	h.mustSync("ns/ok")
	given := h.vip("ns/web")
	evs := h.events()
	warned := 0
	for _, e := range evs {
		if strings.HasPrefix(e, "Warning LoadBalancerIPIgnored") {
			warned++
			if !strings.Contains(e, "spec.loadBalancerIP 10.9.9.9") || !strings.Contains(e, given) {
				t.Errorf("warning %q does not name the field, the value asked and the address given", e)
			}
		}
	}
	if warned != 1 {
		t.Errorf("want exactly one LoadBalancerIPIgnored warning (for ns/web), events = %v", evs)
	}
}

func TestSyncNoNodesWarns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"))
	h.mustSync("ns/web")
	if evs := h.events(); !hasEvent(evs, "Warning UnAvailableLoadBalancer") {
		t.Errorf("events = %v", evs)
	}
}

func TestSyncImplementedElsewhere(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.lb.FailNext("EnsureLoadBalancer", cloudprovider.ImplementedElsewhere)
	h.mustSync("ns/web")
	if evs := h.events(); hasEvent(evs, "Warning") {
		t.Errorf("events = %v", evs)
	}
}

func TestSyncNodeChangeUpdatesHostsOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.mustSync("ns/web")
	h.c.nodes.upsert(node("n2"))
	h.mustSync("ns/web")
	if h.count("EnsureLoadBalancer") != 1 || h.count("UpdateLoadBalancer") != 1 {
		t.Errorf("calls = %v, want one ensure then one update", h.calls())
	}
	if got := h.nodesOf("ns/web"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("nodes = %v", got)
	}
	if evs := h.events(); !hasEvent(evs, "Normal UpdatedLoadBalancer") {
		t.Errorf("events = %v", evs)
	}
	// A node change that does not alter the set costs nothing.
	n2 := node("n2")
	n2.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	h.c.nodes.upsert(n2)
	h.mustSync("ns/web")
	if len(h.calls()) != 2 {
		t.Errorf("calls = %v", h.calls())
	}
}

func TestSyncUpdateFailureWarns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.mustSync("ns/web")
	h.events()
	h.c.nodes.upsert(node("n2"))
	h.lb.FailNext("UpdateLoadBalancer", errors.New("boom"))
	if err := h.sync("ns/web"); err == nil {
		t.Fatal("want an error")
	}
	if evs := h.events(); !hasEvent(evs, "Warning UpdateLoadBalancerFailed") {
		t.Errorf("events = %v", evs)
	}
	// The retry updates again (the applied set was not recorded).
	h.mustSync("ns/web")
	if h.count("UpdateLoadBalancer") != 2 {
		t.Errorf("calls = %v", h.calls())
	}
}

func TestSyncUpdateOfVanishedLoadBalancerEnsures(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.mustSync("ns/web")
	// Deleted in the cloud: the update fails, as the cloud has no such load
	// balancer.
	b, _ := h.balancer("ns/web")
	h.lb.DeleteBalancer(h.cluster, b.Name)
	h.c.nodes.upsert(node("n2"))
	h.mustSync("ns/web")
	h.mustSync("ns/web")
	if h.count("EnsureLoadBalancer") != 2 {
		t.Errorf("calls = %v, want the load balancer ensured again", h.calls())
	}
}

func TestSyncServiceChangeEnsures(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.mustSync("ns/web")
	svc := h.service("ns", "web")
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053})
	h.update(svc)
	h.mustSync("ns/web")
	if h.count("EnsureLoadBalancer") != 2 {
		t.Errorf("calls = %v", h.calls())
	}
}

func TestSyncDeletion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web", withFinalizer, deleting(time.Now())), node("n1"))
	h.lb.PutBalancer(cloudfake.Balancer{Cluster: h.cluster, Service: nn("ns/web"), UID: "uid-web"})
	h.mustSync("ns/web")
	if h.count("EnsureLoadBalancerDeleted") != 1 {
		t.Errorf("calls = %v", h.calls())
	}
	if b, ok := h.balancer("ns/web"); ok {
		t.Errorf("the cloud still holds %+v", b)
	}
	// Its last finalizer removed, the deleting Service is gone.
	err := h.cl.Get(context.Background(), nn("ns/web"), &corev1.Service{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("get the deleted Service after the sync: err = %v, want NotFound (finalizer not removed)", err)
	}
	evs := h.events()
	if !hasEvent(evs, "Normal DeletingLoadBalancer") || !hasEvent(evs, "Normal DeletedLoadBalancer") {
		t.Errorf("events = %v", evs)
	}
}

func TestSyncDeletionFailureKeepsFinalizer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web", withFinalizer, deleting(time.Now())), node("n1"))
	h.lb.FailNext("EnsureLoadBalancerDeleted", errors.New("cloud down"))
	if err := h.sync("ns/web"); err == nil {
		t.Fatal("want an error")
	}
	if !servicehelper.HasLBFinalizer(h.service("ns", "web")) {
		t.Error("finalizer removed although the load balancer may still exist")
	}
	if evs := h.events(); !hasEvent(evs, "Warning DeleteLoadBalancerFailed") {
		t.Errorf("events = %v", evs)
	}
}

func TestSyncTypeChangeDeletes(t *testing.T) {
	t.Parallel()
	svc := lbService("ns", "web", withFinalizer, func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeClusterIP
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}
	})
	h := newHarness(t, Config{}, svc, node("n1"))
	h.mustSync("ns/web")
	got := h.service("ns", "web")
	if servicehelper.HasLBFinalizer(got) || len(got.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("finalizers %v, ingress %v; want both cleared", got.Finalizers, got.Status.LoadBalancer.Ingress)
	}
	if h.count("EnsureLoadBalancerDeleted") != 1 {
		t.Errorf("calls = %v", h.calls())
	}
}

func TestSyncLoadBalancerClass(t *testing.T) {
	t.Parallel()
	other := lbService("ns", "other", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/other") })
	mine := lbService("ns", "mine", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("stratus.io/lb") })
	plain := lbService("ns", "plain")

	t.Run("no class configured", func(t *testing.T) {
		h := newHarness(t, Config{}, other.DeepCopy(), mine.DeepCopy(), plain.DeepCopy(), node("n1"))
		for _, k := range []string{"ns/other", "ns/mine", "ns/plain"} {
			h.mustSync(k)
		}
		if got := h.calls(); !slices.Equal(got, []string{"EnsureLoadBalancer ns/plain"}) {
			t.Errorf("calls = %v", got)
		}
		if servicehelper.HasLBFinalizer(h.service("ns", "other")) {
			t.Error("a Service of another class got the finalizer")
		}
	})
	t.Run("class configured", func(t *testing.T) {
		h := newHarness(t, Config{LoadBalancerClass: "stratus.io/lb"}, other.DeepCopy(), mine.DeepCopy(), plain.DeepCopy(), node("n1"))
		for _, k := range []string{"ns/other", "ns/mine", "ns/plain"} {
			h.mustSync(k)
		}
		if got := h.calls(); !slices.Equal(got, []string{"EnsureLoadBalancer ns/mine", "EnsureLoadBalancer ns/plain"}) {
			t.Errorf("calls = %v", got)
		}
	})
	t.Run("other class being deleted keeps its finalizer", func(t *testing.T) {
		svc := other.DeepCopy()
		withFinalizer(svc)
		deleting(time.Now())(svc)
		h := newHarness(t, Config{}, svc)
		h.mustSync("ns/other")
		if len(h.calls()) != 0 || !servicehelper.HasLBFinalizer(h.service("ns", "other")) {
			t.Errorf("calls %v; another implementation's Service was touched", h.calls())
		}
	})
}

func TestSyncMissingServiceForgetsState(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	h.mustSync("ns/web")
	// Gone without the controller seeing its deletion (say, a finalizer
	// removed by hand).
	svc := h.service("ns", "web")
	svc.Finalizers = nil
	h.update(svc)
	if err := h.cl.Delete(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	h.mustSync("ns/web")
	if h.c.state.get(nn("ns/web")) != nil {
		t.Error("state kept for a deleted Service")
	}
	if len(h.calls()) != 1 {
		t.Errorf("calls = %v", h.calls())
	}
}

func TestSyncNonLoadBalancerIgnored(t *testing.T) {
	t.Parallel()
	svc := lbService("ns", "web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	h := newHarness(t, Config{}, svc, node("n1"))
	h.mustSync("ns/web")
	if len(h.calls()) != 0 || len(h.service("ns", "web").Finalizers) != 0 {
		t.Errorf("calls %v", h.calls())
	}
}

// fakeAnnotations reads only fake.example/known.
type fakeAnnotations struct{}

func (fakeAnnotations) UnknownAnnotations(svc *corev1.Service) (unknown, known []string) {
	for k := range svc.Annotations {
		if strings.HasPrefix(k, "fake.example/") && k != "fake.example/known" {
			unknown = append(unknown, k)
		}
	}
	return unknown, []string{"fake.example/known"}
}

// A misspelt provider annotation must not be ignored in silence: the sync
// warns naming it and what the provider reads, and still ensures.
func TestSyncUnknownProviderAnnotationWarns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{},
		lbService("ns", "typo", func(s *corev1.Service) { s.Annotations = map[string]string{"fake.example/knwon": "1"} }),
		lbService("ns", "ok", func(s *corev1.Service) {
			s.Annotations = map[string]string{"fake.example/known": "1", "other.example/x": "1"}
		}), node("n1"))
	h.c.annots = fakeAnnotations{}
	h.mustSync("ns/typo")
	h.mustSync("ns/ok")
	evs := h.events()
	warned := 0
	for _, e := range evs {
		if strings.HasPrefix(e, "Warning "+ReasonUnknownAnnotation) {
			warned++
			if !strings.Contains(e, "fake.example/knwon") || !strings.Contains(e, "fake.example/known") {
				t.Errorf("warning %q does not name the unknown annotation and the known ones", e)
			}
		}
	}
	if warned != 1 {
		t.Errorf("want exactly one %s warning (for ns/typo), events = %v", ReasonUnknownAnnotation, evs)
	}
	if got := h.count("EnsureLoadBalancer"); got != 2 {
		t.Errorf("EnsureLoadBalancer calls = %d, want 2: an unknown annotation does not block the load balancer", got)
	}
}

// TestFirstSyncSeesEveryCachedNode: should the Node handler lag the cache
// when the first syncs run (a takeover), the first ensure still gets every
// Node the cache holds, not an empty set that would take the load
// balancer's working backends away.
func TestFirstSyncSeesEveryCachedNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"))
	for _, n := range []*corev1.Node{node("n1"), node("n2")} {
		if err := h.cl.Create(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.nodesOf("ns/web"), ","); got != "n1,n2" {
		t.Errorf("first ensure's nodes %q, want n1,n2 from the cache", got)
	}
	for _, e := range h.events() {
		if strings.Contains(e, ReasonUnAvailableLoadBalancer) {
			t.Errorf("event %q: the first ensure saw no node", e)
		}
	}
}

// TestNodeJoiningDuringFirstEnsure: a node initialized while a Service's
// first ensure is in flight reaches its load balancer. The node pass runs
// before the ensure records which nodes it applied, so it has nothing to
// compare; it queues the Service again, and that sync updates the hosts.
func TestNodeJoiningDuringFirstEnsure(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	release := h.lb.Gate("EnsureLoadBalancer")
	done := make(chan error, 1)
	go func() { done <- h.sync("ns/web") }()
	deadline := time.Now().Add(10 * time.Second)
	for h.count("EnsureLoadBalancer") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the ensure never reached the cloud")
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.c.nodes.upsert(node("n2"))
	h.c.nodePass(ctx, h.q)
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := h.nodesOf("ns/web"); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("the first ensure applied %v, want the node set it read, [n1]", got)
	}
	if h.q.Len() != 1 {
		t.Fatalf("the node pass queued %d keys, want the Service whose ensure was in flight", h.q.Len())
	}
	k, _ := h.q.Get()
	h.q.Done(k)
	h.mustSync(k.Service.String())
	if got := h.nodesOf("ns/web"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("after the pass's sync the load balancer has %v, want [n1 n2]", got)
	}
	// Settled: a pass with nothing new queues nothing.
	h.c.nodePass(ctx, h.q)
	if h.q.Len() != 0 {
		t.Errorf("a pass with the node set applied queued %d keys", h.q.Len())
	}
}
