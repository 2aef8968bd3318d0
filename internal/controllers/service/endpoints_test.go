package service

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// noNodePorts makes a Service that allocates no node ports, as the API
// server leaves it: its ports have none.
func noNodePorts(s *corev1.Service) {
	s.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
	for i := range s.Spec.Ports {
		s.Spec.Ports[i].NodePort = 0
	}
}

// ep is one EndpointSlice entry; conditions nil leave them unset.
func ep(addr string, ready, serving, terminating *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{addr}, NodeName: ptr.To("n1"), Zone: ptr.To("z1"),
		Conditions: discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating}}
}

// slice is an EndpointSlice of service ns/svc with one port per
// name=port pair (TCP).
func slice(ns, svc, name string, fam discoveryv1.AddressType, ports map[string]int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: fam,
		Endpoints:   eps,
	}
	for n, p := range ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(n), Port: ptr.To(p), Protocol: ptr.To(corev1.ProtocolTCP)})
	}
	return s
}

func endpointStrings(set cloud.EndpointSet, port string) []string {
	var out []string
	for _, e := range set[port] {
		s := e.Address + ":" + strconv.Itoa(int(e.Port))
		if e.Terminating {
			s += "/terminating"
		}
		if !e.Ready {
			s += "/notready"
		}
		out = append(out, s)
	}
	return out
}

// The set merges every slice of the Service per port name: endpoints
// that cannot serve are left out, serving-but-terminating ones kept and
// marked, an endpoint in two slices counted once (the readier entry),
// named target ports resolved per slice, FQDN slices, addresses of the
// wrong family and ports of another protocol ignored, families filtered.
func TestEndpointSetOf(t *testing.T) {
	t.Parallel()
	svc := lbService("ns", "web", noNodePorts)
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53})
	yes, no := ptr.To(true), ptr.To(false)
	slices_ := []discoveryv1.EndpointSlice{
		*slice("ns", "web", "a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080},
			ep("10.0.0.2", yes, yes, no), ep("10.0.0.1", nil, nil, nil), ep("10.0.0.3", no, no, no),
			ep("10.0.0.4", no, yes, yes), ep("fd00::1", yes, yes, no), ep("not-an-ip", yes, yes, no)),
		// The same pod in a second slice (being replaced), ready there.
		*slice("ns", "web", "b", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 9090},
			ep("10.0.0.5", yes, yes, no)),
		*slice("ns", "web", "c", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080},
			ep("10.0.0.2", no, yes, no)),
		*slice("ns", "web", "d", discoveryv1.AddressTypeIPv6, map[string]int32{"http": 8080},
			ep("fd00::2", yes, yes, no)),
		*slice("ns", "web", "e", discoveryv1.AddressTypeFQDN, map[string]int32{"http": 8080},
			ep("web.example.com", yes, yes, no)),
	}
	set := endpointSetOf(svc, slices_, nil)
	want := []string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.4:8080/terminating/notready", "10.0.0.5:9090", "fd00::2:8080"}
	if got := endpointStrings(set, "http"); !slices.Equal(got, want) {
		t.Errorf("http = %v, want %v", got, want)
	}
	if eps, ok := set["dns"]; !ok || len(eps) != 0 {
		t.Errorf("dns = %v (present %v), want an empty list: the slices have no UDP port", eps, ok)
	}
	if e := set["http"][0]; e.NodeName != "n1" || e.Zone != "z1" || !e.Serving {
		t.Errorf("first endpoint %+v lacks its node, zone or serving condition", e)
	}
	v4 := endpointSetOf(svc, slices_, []corev1.IPFamily{corev1.IPv4Protocol})
	if got := endpointStrings(v4, "http"); slices.Contains(got, "fd00::2:8080") || len(got) != 4 {
		t.Errorf("IPv4 only: %v", got)
	}
}

// endpointHarness is a harness whose cloud has the endpoint-target
// extension, with the given objects (Services, Nodes, EndpointSlices).
func endpointHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	h := newHarness(t, Config{}, objs...)
	h.c.endpoints = h.lb
	return h
}

func (h *harness) reconcile(k string) error {
	_, err := h.c.Reconcile(context.Background(), key{Service: nn(k)})
	return err
}

// A Service without node ports gets a load balancer that targets its
// endpoints: an endpoint change is one update, an unchanged set no call;
// given node ports, it moves to node targets keeping its address.
func TestServiceWithoutNodePortsTargetsEndpoints(t *testing.T) {
	t.Parallel()
	yes, no := ptr.To(true), ptr.To(false)
	s := slice("ns", "web", "web-1", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ep("10.64.0.5", yes, yes, no))
	h := endpointHarness(t, lbService("ns", "web", noNodePorts), node("n1"), s)
	if err := h.reconcile("ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := h.count("EnsureLoadBalancer"); n != 0 {
		t.Errorf("EnsureLoadBalancer called %d times for endpoint targets", n)
	}
	b, ok := h.balancer("ns/web")
	if !ok || !slices.Equal(b.Endpoints, []string{"10.64.0.5:8080"}) || len(b.Hosts) != 0 {
		t.Fatalf("load balancer %+v, want endpoint 10.64.0.5:8080 and no hosts", b)
	}
	svc := h.service("ns", "web")
	if got := ingressIPs(svc); len(got) != 1 {
		t.Fatalf("ingress %v, want one address", got)
	}
	wantCondition(t, svc, ConditionServing, metav1.ConditionTrue, ReasonEnsuredLoadBalancer)
	vip := h.vip("ns/web")

	// Nothing changed: no cloud call.
	if err := h.reconcile("ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := h.count("EnsureLoadBalancerEndpoints"); n != 1 {
		t.Errorf("EnsureLoadBalancerEndpoints called %d times, want 1 (no change, no call)", n)
	}

	// A second pod becomes ready: one update with both.
	s.Endpoints = append(s.Endpoints, ep("10.64.1.7", yes, yes, no))
	if err := h.cl.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if err := h.reconcile("ns/web"); err != nil {
		t.Fatal(err)
	}
	if b, _ := h.balancer("ns/web"); !slices.Equal(b.Endpoints, []string{"10.64.0.5:8080", "10.64.1.7:8080"}) {
		t.Errorf("endpoints after the change = %v", b.Endpoints)
	}
	if evs := h.events(); !hasEvent(evs, "Normal UpdatedLoadBalancer") {
		t.Errorf("events = %v, want UpdatedLoadBalancer", evs)
	}

	// Node ports allocated: node targets, the address kept.
	svc = h.service("ns", "web")
	svc.Spec.AllocateLoadBalancerNodePorts = ptr.To(true)
	svc.Spec.Ports[0].NodePort = 30080
	h.update(svc)
	if err := h.reconcile("ns/web"); err != nil {
		t.Fatal(err)
	}
	b, _ = h.balancer("ns/web")
	if len(b.Endpoints) != 0 || !slices.Equal(b.Hosts, []string{"n1"}) || h.vip("ns/web") != vip {
		t.Errorf("after node ports: %+v, want hosts [n1], no endpoints, address %s", b, vip)
	}
	if st := h.c.state.get(nn("ns/web")); st.targets != targetNodes {
		t.Errorf("record targets %v, want nodes", st.targets)
	}
}

// A provider whose extension says no refuses a Service that needs
// endpoint targets: no cloud call, Serving=False with the reason, a
// warning that names the ports and the provider's reason.
func TestEndpointTargetsRefusedByTheProvider(t *testing.T) {
	t.Parallel()
	h := endpointHarness(t, lbService("ns", "web", noNodePorts), node("n1"))
	h.lb.RefuseEndpointTargets = "no route to pod addresses"
	err := h.reconcile("ns/web")
	if !errors.Is(err, errEndpointTargetsNotSupported) {
		t.Fatalf("reconcile = %v, want errEndpointTargetsNotSupported", err)
	}
	if calls := h.calls(); len(calls) != 0 {
		t.Errorf("cloud calls %v for a refused Service", calls)
	}
	svc := h.service("ns", "web")
	wantCondition(t, svc, ConditionServing, metav1.ConditionFalse, ReasonEndpointTargetsNotSupported, "no route to pod addresses", "80/TCP")
	if evs := h.events(); !hasEvent(evs, "Warning EndpointTargetsNotSupported") {
		t.Errorf("events = %v, want an EndpointTargetsNotSupported warning", evs)
	}
}

// Without the extension, a Service without node ports is handed to
// EnsureLoadBalancer as upstream hands it (node targets), and told so.
func TestEndpointTargetsWithoutTheExtension(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web", noNodePorts), node("n1"))
	if err := h.reconcile("ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := h.count("EnsureLoadBalancer"); n != 1 {
		t.Errorf("EnsureLoadBalancer called %d times, want 1", n)
	}
	wantCondition(t, h.service("ns", "web"), ConditionServing, metav1.ConditionTrue, ReasonEndpointTargetsNotSupported,
		"targets nodes", "does not implement endpoint targets")
	if evs := h.events(); !hasEvent(evs, "Warning EndpointTargetsNotSupported") {
		t.Errorf("events = %v, want an EndpointTargetsNotSupported warning", evs)
	}
}

// A Service with node ports opts in with the annotation; a value the
// controller does not know is a warning that names it, and node targets.
func TestEndpointTargetsAnnotation(t *testing.T) {
	t.Parallel()
	annotated := func(v string) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Annotations = map[string]string{cloud.AnnotationLoadBalancerTargets: v}
		}
	}
	h := endpointHarness(t, lbService("ns", "in", annotated("endpoints")), lbService("ns", "typo", annotated("pods")), node("n1"))
	for _, k := range []string{"ns/in", "ns/typo"} {
		if err := h.reconcile(k); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := h.balancer("ns/in"); b.Endpoints == nil || len(b.Hosts) != 0 {
		t.Errorf("opted-in Service's load balancer %+v, want endpoint targets", b)
	}
	if b, _ := h.balancer("ns/typo"); b.Endpoints != nil || !slices.Equal(b.Hosts, []string{"n1"}) {
		t.Errorf("misspelt opt-in's load balancer %+v, want node targets", b)
	}
	evs := h.events()
	if !slices.ContainsFunc(evs, func(e string) bool {
		return hasEvent([]string{e}, "Warning InvalidAnnotation") && containsAll(e, `"pods"`, cloud.AnnotationLoadBalancerTargets)
	}) {
		t.Errorf("events = %v, want InvalidAnnotation naming the annotation and the value", evs)
	}
	// The node pass leaves endpoint targets alone.
	h.c.nodes.upsert(node("n2"))
	if keys := h.c.state.outdated(h.c.nodes.snapshot()); !slices.Equal(keys, []types.NamespacedName{nn("ns/typo")}) {
		t.Errorf("node pass would update %v, want only the node-target Service", keys)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// A lone endpoint change is synced at once; changes in a burst wait until
// they settle, never longer than the maximum hold from the burst's start.
func TestEndpointPacer(t *testing.T) {
	t.Parallel()
	p := newEndpointPacer(time.Second) // settle 250ms, hold at most 5s
	q := &recordingQueue{}
	k := key{Service: nn("ns/web")}
	t0 := time.Unix(1000, 0)
	p.changed(q, k, t0)
	if !slices.Equal(q.after, []time.Duration{0}) || p.wait(k.Service, t0) != 0 {
		t.Fatalf("lone change: queued %v, wait %v; want at once, no hold", q.after, p.wait(k.Service, t0))
	}
	// A burst: a change every 100ms for 10s.
	now := t0
	for i := 1; i <= 100; i++ {
		now = t0.Add(time.Duration(i) * 100 * time.Millisecond)
		p.changed(q, k, now)
	}
	last := q.after[len(q.after)-1]
	if last != 0 && last > 250*time.Millisecond {
		t.Errorf("last delay %v, want at most the settle period", last)
	}
	// Within the burst the sync is held, and the hold ends at its due time.
	for _, d := range q.after[1:] {
		if d > 5*time.Second {
			t.Fatalf("a delay of %v exceeds the maximum hold", d)
		}
	}
	// A sync queued by the burst's first change comes early: it is told
	// to wait for the rest.
	if d := p.wait(k.Service, now); d <= 0 || d > 250*time.Millisecond {
		t.Errorf("wait in the middle of a burst = %v, want the rest of the settle period", d)
	}
	if d := p.wait(k.Service, now.Add(6*time.Second)); d != 0 {
		t.Errorf("wait after the burst settled = %v, want 0", d)
	}
	p.forget(k.Service)
	if d := p.wait(k.Service, now); d != 0 {
		t.Errorf("wait for a forgotten Service = %v", d)
	}
}

type recordingQueue struct {
	queue
	after []time.Duration
}

func (q *recordingQueue) Add(key)                         { q.after = append(q.after, 0) }
func (q *recordingQueue) AddAfter(_ key, d time.Duration) { q.after = append(q.after, d) }

// --load-balancer-targets=endpoints gives a Service with node ports and no
// annotation endpoint targets; its annotation "nodes" opts out.
func TestEndpointTargetsByDefault(t *testing.T) {
	t.Parallel()
	optOut := func(s *corev1.Service) {
		s.Annotations = map[string]string{cloud.AnnotationLoadBalancerTargets: cloud.TargetsNodes}
	}
	h := endpointHarness(t, lbService("ns", "plain"), lbService("ns", "out", optOut), node("n1"))
	h.c.cfg.EndpointTargetsByDefault = true
	for _, k := range []string{"ns/plain", "ns/out"} {
		if err := h.reconcile(k); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := h.balancer("ns/plain"); b.Endpoints == nil {
		t.Errorf("a Service without the annotation: %+v, want endpoint targets", b)
	}
	if b, _ := h.balancer("ns/out"); b.Endpoints != nil || !slices.Equal(b.Hosts, []string{"n1"}) {
		t.Errorf("a Service that opts out: %+v, want node targets", b)
	}
}

// `stratus explain` says what an endpoint-target load balancer targets.
func TestExplainEndpointTargets(t *testing.T) {
	t.Parallel()
	yes, no := ptr.To(true), ptr.To(false)
	s := slice("ns", "web", "web-1", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ep("10.64.0.5", yes, yes, no))
	h := endpointHarness(t, lbService("ns", "web", noNodePorts), node("n1"), s)
	if err := h.reconcile("ns/web"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Join(h.c.describeService(context.Background(), serviceRef(nn("ns/web"))), "\n")
	if !strings.Contains(lines, "targets 1 endpoints (endpoint targets): http=10.64.0.5:8080") {
		t.Errorf("explain says %q", lines)
	}
}
