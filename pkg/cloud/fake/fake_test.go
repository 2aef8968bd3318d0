package fake_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestInstancesAnswerAsAProviderDoes(t *testing.T) {
	t.Parallel()
	c := fake.New(cloud.Instance{ProviderID: "fake://1", Name: "a", Shutdown: true,
		Metadata: cloudprovider.InstanceMetadata{InstanceType: "small"}})
	ctx := t.Context()
	if ok, err := c.InstanceExists(ctx, node("a", "")); !ok || err != nil {
		t.Errorf("exists by name = %v, %v", ok, err)
	}
	// A providerID wins over the name: a reused name is another machine.
	if ok, err := c.InstanceExists(ctx, node("a", "fake://2")); ok || err != nil {
		t.Errorf("exists by another providerID = %v, %v", ok, err)
	}
	if _, err := c.InstanceShutdown(ctx, node("b", "")); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("shutdown of a missing instance: %v", err)
	}
	md, err := c.InstanceMetadata(ctx, node("a", "fake://1"))
	if err != nil || md.ProviderID != "fake://1" || md.InstanceType != "small" {
		t.Errorf("metadata = %+v, %v", md, err)
	}
	c.DeleteInstance("fake://1")
	if list, err := c.ListInstances(ctx); err != nil || len(list) != 0 {
		t.Errorf("list after delete = %v, %v", list, err)
	}
	if got := c.CallCount("InstanceExists"); got != 2 {
		t.Errorf("InstanceExists logged %d times, want 2", got)
	}
}

func TestErrorsAndGates(t *testing.T) {
	t.Parallel()
	c := fake.New()
	boom := errors.New("boom")
	c.SetError("ListInstances", boom)
	if _, err := c.ListInstances(t.Context()); !errors.Is(err, boom) {
		t.Errorf("ListInstances = %v, want boom", err)
	}
	if _, err := c.ListRoutes(t.Context(), "k"); err != nil {
		t.Errorf("another operation failed too: %v", err)
	}
	c.SetError("ListInstances", nil)
	release := c.Gate("ListInstances")
	done := make(chan error, 1)
	go func() { _, err := c.ListInstances(context.Background()); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("gated call returned before release: %v", err)
	default:
	}
	release()
	if err := <-done; err != nil {
		t.Errorf("released call: %v", err)
	}
}

func TestLoadBalancersAreScopedToTheCluster(t *testing.T) {
	t.Parallel()
	c := fake.New()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u-1"}}
	ctx := t.Context()
	st, err := c.EnsureLoadBalancer(ctx, "one", svc, []*corev1.Node{node("b", ""), node("a", "")})
	if err != nil || len(st.Ingress) != 1 {
		t.Fatalf("ensure = %v, %v", st, err)
	}
	if _, exists, _ := c.GetLoadBalancer(ctx, "two", svc); exists {
		t.Error("another cluster sees the load balancer")
	}
	if err := c.UpdateLoadBalancer(ctx, "two", svc, nil); err == nil {
		t.Error("update of a load balancer another cluster owns succeeded")
	}
	if list, _ := c.ListLoadBalancers(ctx, "one"); len(list) != 1 || list[0].ServiceUID != "u-1" {
		t.Errorf("list = %+v", list)
	}
	if b := c.Balancers(); len(b) != 1 || b[0].Hosts[0] != "a" {
		t.Errorf("balancers = %+v", b)
	}
	if err := c.EnsureLoadBalancerDeleted(ctx, "one", svc); err != nil || len(c.Balancers()) != 0 {
		t.Errorf("delete: %v, left %v", err, c.Balancers())
	}
}

func TestUpstreamHidesTheExtensions(t *testing.T) {
	t.Parallel()
	p := fake.Upstream(fake.New())
	if _, ok := p.(cloud.InstanceLister); ok {
		t.Error("the provider lists instances")
	}
	in, _ := p.InstancesV2()
	if _, ok := in.(cloud.InstanceLister); ok {
		t.Error("its InstancesV2 lists instances")
	}
	lb, _ := p.LoadBalancer()
	if _, ok := lb.(cloud.LoadBalancerLister); ok {
		t.Error("its LoadBalancer lists load balancers")
	}
}

func TestFailNextAnswersTheNextCallsInOrder(t *testing.T) {
	t.Parallel()
	c := fake.New()
	ctx := t.Context()
	first, second, always := errors.New("first"), errors.New("second"), errors.New("always")
	c.FailNext("ListInstances", first, second)
	c.SetError("ListInstances", always)
	for i, want := range []error{first, second} {
		// Returned as given: the text is the provider's, not the double's.
		if _, err := c.ListInstances(ctx); err != want { //nolint:errorlint // identity is the point
			t.Errorf("call %d = %v, want %v as given", i, err, want)
		}
	}
	if _, err := c.ListInstances(ctx); !errors.Is(err, always) {
		t.Errorf("after the queue: %v, want the error SetError set", err)
	}
	c.SetError("ListInstances", nil)
	if _, err := c.ListInstances(ctx); err != nil {
		t.Errorf("with nothing queued or set: %v", err)
	}
	if _, err := c.ListRoutes(ctx, "k"); err != nil {
		t.Errorf("another operation took a queued error: %v", err)
	}
}

func TestThrottledIsARateLimitWithRetryAfter(t *testing.T) {
	t.Parallel()
	err := fake.Throttled(3 * time.Second)
	if !errors.Is(err, cloud.ErrThrottled) {
		t.Errorf("%v does not wrap cloud.ErrThrottled", err)
	}
	if d, ok := cloud.RetryAfter(err); !ok || d != 3*time.Second {
		t.Errorf("RetryAfter(%v) = %v, %v; want 3s", err, d, ok)
	}
}

func TestCallLogKeepsObjectsAndNodesAsGiven(t *testing.T) {
	t.Parallel()
	c := fake.New()
	ctx := t.Context()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u-1"}}
	if _, err := c.EnsureLoadBalancer(ctx, "k", svc, []*corev1.Node{node("b", "fake://b"), node("a", "")}); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateLoadBalancer(ctx, "k", svc, []*corev1.Node{node("c", "fake://c")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListLoadBalancers(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	log := c.CallLog()
	want := []string{"EnsureLoadBalancer ns/s", "UpdateLoadBalancer ns/s", "ListLoadBalancers"}
	if len(log) != len(want) {
		t.Fatalf("log = %v, want %v", log, want)
	}
	for i, w := range want {
		if log[i].String() != w {
			t.Errorf("call %d = %q, want %q", i, log[i], w)
		}
	}
	if !slices.Equal(log[0].Nodes, []string{"b", "a"}) || !slices.Equal(log[1].Nodes, []string{"c"}) || log[2].Nodes != nil {
		t.Errorf("nodes given = %v, %v, %v; want [b a], [c], none", log[0].Nodes, log[1].Nodes, log[2].Nodes)
	}
	if got := c.Calls(); !slices.Equal(got, []string{"EnsureLoadBalancer", "UpdateLoadBalancer", "ListLoadBalancers"}) {
		t.Errorf("Calls = %v", got)
	}
}

func TestLoadBalancerStatusAllocatedOrCanned(t *testing.T) {
	t.Parallel()
	c := fake.New()
	ctx := t.Context()
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-web"}}
	db := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "u-db"}}
	st1, err1 := c.EnsureLoadBalancer(ctx, "k", web, nil)
	canned := corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "db.example"}}}
	c.SetStatus("ns/db", canned)
	st2, err2 := c.EnsureLoadBalancer(ctx, "k", db, nil)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if len(st1.Ingress) != 1 || st1.Ingress[0].IP == "" || st1.Ingress[0].IPMode == nil || *st1.Ingress[0].IPMode != corev1.LoadBalancerIPModeVIP {
		t.Errorf("allocated status = %+v, want one IP with ipMode VIP", st1)
	}
	if len(st2.Ingress) != 1 || st2.Ingress[0].Hostname != "db.example" {
		t.Errorf("canned status = %+v, want %+v", st2, canned)
	}
	// Each call hands out its own copy: a caller's edit is not the cloud's.
	st1.Ingress[0].IP = "edited"
	if got, _, _ := c.GetLoadBalancer(ctx, "k", web); got.Ingress[0].IP == "edited" {
		t.Error("an edit of a returned status changed the load balancer")
	}
	if b, ok := c.Balancer("k", "ns/web"); !ok || b.Status.Ingress[0].IP == "edited" || b.UID != "u-web" {
		t.Errorf("Balancer(ns/web) = %+v, %v", b, ok)
	}
	if _, ok := c.Balancer("other", "ns/web"); ok {
		t.Error("another cluster's lookup found the load balancer")
	}
}

func TestPutAndDeleteBalancerBehindTheCallersBack(t *testing.T) {
	t.Parallel()
	c := fake.New()
	ctx := t.Context()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u-1"}}
	c.PutBalancer(fake.Balancer{Cluster: "k", Service: types.NamespacedName{Namespace: "ns", Name: "s"}, UID: "u-1",
		Backends: []string{"fake://b", "fake://a"}})
	c.PutBalancer(fake.Balancer{Cluster: "k", Name: "lb-untagged"})
	if n := len(c.Calls()); n != 0 {
		t.Errorf("PutBalancer logged %d calls", n)
	}
	list, err := c.ListLoadBalancers(ctx, "k")
	if err != nil || len(list) != 2 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	// Unnamed, it takes the name the double's own calls use.
	if _, exists, _ := c.GetLoadBalancer(ctx, "k", svc); !exists {
		t.Error("GetLoadBalancer does not find the load balancer put for the Service")
	}
	for _, lb := range list {
		if lb.ServiceUID == "u-1" && !slices.Equal(lb.Backends, []string{"fake://b", "fake://a"}) {
			t.Errorf("backends listed = %v, want them as put", lb.Backends)
		}
	}
	if _, err := c.EnsureLoadBalancer(ctx, "k", svc, []*corev1.Node{node("b", "fake://b"), node("x", "")}); err != nil {
		t.Fatal(err)
	}
	if b, _ := c.Balancer("k", "ns/s"); !slices.Equal(b.Backends, []string{"fake://b"}) || !slices.Equal(b.Hosts, []string{"b", "x"}) {
		t.Errorf("after ensure: backends %v (want the providerIDs given), hosts %v", b.Backends, b.Hosts)
	}
	c.DeleteBalancer("k", "lb-untagged")
	if list, _ := c.ListLoadBalancers(ctx, "k"); len(list) != 1 || list[0].ServiceUID != "u-1" {
		t.Errorf("after DeleteBalancer: %+v", list)
	}
}

func TestProtocolsRefusesOtherPortsBeforeAnyChange(t *testing.T) {
	t.Parallel()
	c := &fake.Cloud{Protocols: []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP}}
	ctx := t.Context()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u-1"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
			{Name: "sig", Protocol: corev1.ProtocolSCTP, Port: 3868},
		}}}
	_, err := c.EnsureLoadBalancer(ctx, "k", svc, nil)
	if !errors.Is(err, cloud.ErrPortNotSupported) || !strings.Contains(err.Error(), `"sig" (3868/SCTP)`) {
		t.Errorf("ensure with an SCTP port = %v, want cloud.ErrPortNotSupported naming the port", err)
	}
	if len(c.Balancers()) != 0 {
		t.Errorf("a refused ensure left %+v", c.Balancers())
	}
	svc.Spec.Ports = svc.Spec.Ports[:1]
	if _, err := c.EnsureLoadBalancer(ctx, "k", svc, nil); err != nil || len(c.Balancers()) != 1 {
		t.Errorf("ensure with UDP only = %v, balancers %+v", err, c.Balancers())
	}
}

func TestEditInstanceChangesItBehindTheCallersBack(t *testing.T) {
	t.Parallel()
	c := fake.New(cloud.Instance{ProviderID: "fake://1", Name: "a", Metadata: cloudprovider.InstanceMetadata{
		InstanceType:  "small",
		NodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
	}})
	ctx := t.Context()
	before, err := c.InstanceMetadata(ctx, node("a", "fake://1"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.EditInstance("a", func(in *cloud.Instance) {
		in.Metadata.InstanceType = "large"
		in.Metadata.NodeAddresses[0].Address = "10.0.0.9"
	}) {
		t.Fatal("EditInstance did not find the instance called a")
	}
	if n := len(c.Calls()); n != 1 {
		t.Errorf("EditInstance logged calls: %v", c.Calls())
	}
	md, err := c.InstanceMetadata(ctx, node("a", "fake://1"))
	if err != nil || md.InstanceType != "large" || md.NodeAddresses[0].Address != "10.0.0.9" {
		t.Errorf("metadata after the edit = %+v, %v", md, err)
	}
	// An answer already given is the caller's: the edit does not reach it.
	if before.NodeAddresses[0].Address != "10.0.0.1" {
		t.Errorf("the edit changed an earlier answer's addresses: %v", before.NodeAddresses)
	}
	// A changed ProviderID moves the instance, as PutInstance would put it.
	if !c.EditInstance("a", func(in *cloud.Instance) { in.ProviderID, in.Metadata.ProviderID = "fake://2", "" }) {
		t.Fatal("EditInstance did not find the instance called a")
	}
	held := c.Held()
	if len(held) != 1 || held[0].ProviderID != "fake://2" || held[0].Metadata.ProviderID != "fake://2" {
		t.Errorf("held after a providerID edit = %+v, want one instance under fake://2", held)
	}
	if c.EditInstance("b", func(*cloud.Instance) { t.Error("change called for a missing instance") }) {
		t.Error("EditInstance reported an instance called b")
	}
}

func TestNilMetadataAnswersAsABuggyProvider(t *testing.T) {
	t.Parallel()
	c := fake.New(cloud.Instance{ProviderID: "fake://1", Name: "a"})
	c.NilMetadata = true
	ctx := t.Context()
	if md, err := c.InstanceMetadata(ctx, node("a", "fake://1")); md != nil || err != nil {
		t.Errorf("metadata = %+v, %v; want nil, nil", md, err)
	}
	// A missing instance and a set error are still answered as such.
	if _, err := c.InstanceMetadata(ctx, node("b", "")); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("metadata of a missing instance: %v", err)
	}
	boom := errors.New("boom")
	c.SetError("InstanceMetadata", boom)
	if _, err := c.InstanceMetadata(ctx, node("a", "fake://1")); !errors.Is(err, boom) {
		t.Errorf("metadata with an error set: %v", err)
	}
	if got := c.CallCount("InstanceMetadata"); got != 3 {
		t.Errorf("InstanceMetadata logged %d times, want 3", got)
	}
}
