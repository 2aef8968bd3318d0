package service

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// names returns the nodes' names, in the order given.
func names(nodes []*corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

type harness struct {
	t      *testing.T
	c      *Controller
	cl     client.Client
	writes atomic.Int32 // API writes the controller made
	// lb is the cloud: the controller's LoadBalancer and Lister.
	lb       *cloudfake.Cloud
	cluster  string
	recorder *events.FakeRecorder
	reg      *prometheus.Registry
	q        queue // the controller's queue, as SetupWithManager would capture it
}

// newHarness builds the controller on controller-runtime's fake client.
// The API server's Service status strategy keeps the metadata changes of a
// status patch (the controller writes its finalizer that way, as upstream
// does); the fake client would drop them, so the harness applies a status
// patch to the metadata as well.
func newHarness(t *testing.T, cfg Config, objs ...client.Object) *harness {
	t.Helper()
	h := &harness{t: t, lb: cloudfake.New(),
		recorder: events.NewFakeRecorder(100), reg: prometheus.NewRegistry()}
	h.cl = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				h.writes.Add(1)
				return c.Patch(ctx, obj, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				h.writes.Add(1)
				if sub != "status" {
					return fmt.Errorf("unexpected patch of subresource %s", sub)
				}
				if err := c.Patch(ctx, obj.DeepCopyObject().(client.Object), p); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}).Build()
	if cfg.ClusterName == "" {
		cfg.ClusterName = "test"
	}
	h.cluster = cfg.ClusterName
	c, err := New(Deps{
		Deps:         kit.Deps{Client: h.cl, Recorder: h.recorder, Registerer: h.reg},
		APIReader:    h.cl,
		LoadBalancer: h.lb,
		Lister:       h.lb,
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.q = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[key]())
	t.Cleanup(h.q.ShutDown)
	c.queue.Set(h.q)
	h.c = c
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			c.nodes.upsert(n)
		}
	}
	return h
}

// calls returns the load balancer calls the cloud served, in order, as
// "op namespace/name": the orphan pass's lists are left out, so each test
// counts the calls that create, change or delete.
func (h *harness) calls() []string {
	var out []string
	for _, c := range h.lb.CallLog() {
		if c.Op != "ListLoadBalancers" {
			out = append(out, c.String())
		}
	}
	return out
}

// count is how many times the cloud served op.
func (h *harness) count(op string) int { return h.lb.CallCount(op) }

// balancer is the load balancer the cloud holds for service
// ("namespace/name").
func (h *harness) balancer(service string) (cloudfake.Balancer, bool) {
	return h.lb.Balancer(h.cluster, service)
}

// nodesOf returns the names of the nodes the cloud's load balancer of
// service targets, sorted; none when it has no load balancer.
func (h *harness) nodesOf(service string) []string {
	b, _ := h.balancer(service)
	return b.Hosts
}

// vip is the address the cloud gave service's load balancer.
func (h *harness) vip(service string) string {
	h.t.Helper()
	b, ok := h.balancer(service)
	if !ok || len(b.Status.Ingress) == 0 || b.Status.Ingress[0].IP == "" {
		h.t.Fatalf("the cloud gave %s no address: %+v", service, b)
	}
	return b.Status.Ingress[0].IP
}

// nn parses "namespace/name".
func nn(s string) types.NamespacedName {
	ns, name, _ := strings.Cut(s, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}

func (h *harness) sync(key string) error {
	h.t.Helper()
	return h.c.sync(context.Background(), nn(key))
}

func (h *harness) mustSync(key string) {
	h.t.Helper()
	if err := h.sync(key); err != nil {
		h.t.Fatalf("sync %s: %v", key, err)
	}
}

func (h *harness) service(ns, name string) *corev1.Service {
	h.t.Helper()
	svc := &corev1.Service{}
	if err := h.cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
		h.t.Fatal(err)
	}
	return svc
}

// update writes svc as another client would (not counted as the
// controller's write).
func (h *harness) update(svc *corev1.Service) {
	h.t.Helper()
	if err := h.cl.Update(context.Background(), svc); err != nil {
		h.t.Fatal(err)
	}
}

// updateStatus writes svc's status as another client would.
func (h *harness) updateStatus(svc *corev1.Service) {
	h.t.Helper()
	if err := h.cl.Status().Update(context.Background(), svc); err != nil {
		h.t.Fatal(err)
	}
}

// create creates svc as another client would.
func (h *harness) create(svc *corev1.Service) {
	h.t.Helper()
	if err := h.cl.Create(context.Background(), svc); err != nil {
		h.t.Fatal(err)
	}
}

// events drains the recorded events.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(evs []string, prefix string) bool {
	for _, e := range evs {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func lbService(ns, name string, mut ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80,
				TargetPort: intstr.FromInt32(8080), NodePort: 30080}},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
		},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

func withFinalizer(s *corev1.Service) {
	s.Finalizers = append(s.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
}

func node(name string, mut ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec:       corev1.NodeSpec{ProviderID: "fake://" + name},
	}
	for _, m := range mut {
		m(n)
	}
	return n
}

func deleting(t time.Time) func(*corev1.Service) {
	return func(s *corev1.Service) { s.DeletionTimestamp = &metav1.Time{Time: t} }
}
