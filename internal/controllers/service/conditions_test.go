package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// wantCondition fails unless svc carries condition t with status and reason,
// its message containing each of msgs.
func wantCondition(t *testing.T, svc *corev1.Service, typ string, status metav1.ConditionStatus, reason string, msgs ...string) {
	t.Helper()
	c := meta.FindStatusCondition(svc.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("%s: no %s condition in %+v", svc.Name, typ, svc.Status.Conditions)
	}
	if c.Status != status || c.Reason != reason {
		t.Errorf("%s: %s=%s/%s (%q), want %s/%s", svc.Name, typ, c.Status, c.Reason, c.Message, status, reason)
	}
	for _, m := range msgs {
		if !strings.Contains(c.Message, m) {
			t.Errorf("%s: %s message %q lacks %q", svc.Name, typ, c.Message, m)
		}
	}
}

// A quota refusal sets Serving=False with the cloud's message and the next
// retry time; success turns it True, keeps another writer's condition, and a
// sync that changes nothing writes nothing.
func TestConditionsFailedThenServing(t *testing.T) {
	t.Parallel()
	other := metav1.Condition{Type: "example.com/Audited", Status: metav1.ConditionTrue, Reason: "Audited", Message: "by someone else",
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))}
	h := newHarness(t, Config{MinRetryDelay: 5 * time.Second, MaxRetryDelay: time.Minute},
		lbService("ns", "web", func(s *corev1.Service) { s.Status.Conditions = []metav1.Condition{other} }), node("n1"))
	now := time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC)
	h.c.now = func() time.Time { return now }
	ctx := context.Background()
	k := key{Service: nn("ns/web")}

	quota := fmt.Errorf("%w: quota loadBalancers exceeded (limit 0)", cloud.ErrQuotaExceeded)
	h.lb.FailNext("EnsureLoadBalancer", quota, quota)
	if _, err := h.c.Reconcile(ctx, k); err == nil {
		t.Fatal("the refused ensure reported no error")
	}
	svc := h.service("ns", "web")
	wantCondition(t, svc, ConditionServing, metav1.ConditionFalse, ReasonQuotaExceeded, "quota loadBalancers exceeded (limit 0)",
		"next retry at 2026-11-26T19:00:05Z (in 5s)")
	wantCondition(t, svc, ConditionProvisioning, metav1.ConditionTrue, ReasonRetryingAfterError, "quota loadBalancers exceeded")
	if meta.FindStatusCondition(svc.Status.Conditions, ConditionPortsError) != nil {
		t.Error("a quota refusal set LoadBalancerPortsError")
	}

	// The queue counted the failure: the next retry is twice as far.
	h.c.limiter.When(k)
	if _, err := h.c.Reconcile(ctx, k); err == nil {
		t.Fatal("the second refused ensure reported no error")
	}
	wantCondition(t, h.service("ns", "web"), ConditionServing, metav1.ConditionFalse, ReasonQuotaExceeded, "(in 10s)")

	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	svc = h.service("ns", "web")
	wantCondition(t, svc, ConditionServing, metav1.ConditionTrue, ReasonEnsuredLoadBalancer, h.vip("ns/web"))
	if msg := meta.FindStatusCondition(svc.Status.Conditions, ConditionServing).Message; strings.Contains(msg, "no nodes") {
		t.Errorf("a load balancer with node n1 says %q", msg)
	}
	wantCondition(t, svc, ConditionProvisioning, metav1.ConditionFalse, ReasonProvisioned)
	got := meta.FindStatusCondition(svc.Status.Conditions, other.Type)
	if got == nil || got.Message != other.Message || !got.LastTransitionTime.Equal(&other.LastTransitionTime) {
		t.Errorf("another writer's condition became %+v, want %+v", got, other)
	}

	before := h.writes.Load()
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	if n := h.writes.Load() - before; n != 0 {
		t.Errorf("a sync that changed nothing made %d writes", n)
	}
}

// A RetryError is the cloud at work, not a failure. A new load
// balancer's first one writes nothing (most are ready at the next sync,
// which publishes Serving in upstream's one status write); a second says
// Provisioning=True with the provider's message and no retry time (which
// would rewrite the condition at every poll); a throttled call says so.
func TestConditionsWaitingForCloudAndThrottled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	h.lb.FailNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("load balancer lb-1 is provisioning", time.Second))
	before := h.writes.Load()
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	if svc := h.service("ns", "web"); len(svc.Status.Conditions) != 0 {
		t.Fatalf("conditions %+v after the first provisioning answer, want none yet", svc.Status.Conditions)
	}
	if got := h.writes.Load() - before; got != 1 {
		t.Errorf("%d API writes for the first provisioning answer, want 1 (the finalizer)", got)
	}
	h.lb.FailNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("load balancer lb-1 is provisioning", time.Second))
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	svc := h.service("ns", "web")
	wantCondition(t, svc, ConditionProvisioning, metav1.ConditionTrue, ReasonWaitingForCloud, "lb-1 is provisioning")
	wantCondition(t, svc, ConditionServing, metav1.ConditionFalse, ReasonWaitingForCloud)
	if c := meta.FindStatusCondition(svc.Status.Conditions, ConditionProvisioning); strings.Contains(c.Message, "next retry") {
		t.Errorf("a RetryError's condition names a retry time: %q", c.Message)
	}

	h.lb.FailNext("EnsureLoadBalancer", cloudfake.Throttled(time.Second))
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, h.service("ns", "web"), ConditionProvisioning, metav1.ConditionTrue, ReasonThrottled, "429")

	// Another Service, ready at its second sync: the address and
	// Serving=True in one status write, no Provisioning write before it.
	h.create(lbService("ns", "quick"))
	q := key{Service: nn("ns/quick")}
	h.lb.FailNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("load balancer lb-2 is provisioning", time.Second))
	before = h.writes.Load()
	if _, err := h.c.Reconcile(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Reconcile(ctx, q); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, h.service("ns", "quick"), ConditionServing, metav1.ConditionTrue, ReasonEnsuredLoadBalancer)
	if got := h.writes.Load() - before; got != 2 {
		t.Errorf("%d API writes for a load balancer ready at its second sync, want 2 (finalizer, status), as upstream", got)
	}
}

// A refused port sets LoadBalancerPortsError=True; once the Service is
// served, it turns False.
func TestConditionsPortsError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	h.lb.FailNext("EnsureLoadBalancer", fmt.Errorf("port \"sctp\" (80/SCTP): %w", cloud.ErrPortNotSupported))
	if _, err := h.c.Reconcile(ctx, k); err == nil {
		t.Fatal("no error")
	}
	svc := h.service("ns", "web")
	wantCondition(t, svc, ConditionPortsError, metav1.ConditionTrue, ReasonPortNotSupported, "80/SCTP")
	wantCondition(t, svc, ConditionServing, metav1.ConditionFalse, ReasonSyncLoadBalancerFailed, "80/SCTP")
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, h.service("ns", "web"), ConditionPortsError, metav1.ConditionFalse, ReasonPortsAccepted)
}

// A cloud without SCTP refuses a Service's SCTP port: the condition and the
// warning name the port and nothing is made; once the port is changed to
// TCP, the Service is served and the condition clears.
func TestConditionsPortRefusedByTheCloud(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web", func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "sig", Protocol: corev1.ProtocolSCTP, Port: 3868, NodePort: 30868})
	}), node("n1"))
	h.lb.Protocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP}
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	if _, err := h.c.Reconcile(ctx, k); !errors.Is(err, cloud.ErrPortNotSupported) {
		t.Fatalf("reconcile = %v, want the cloud's refusal", err)
	}
	svc := h.service("ns", "web")
	wantCondition(t, svc, ConditionPortsError, metav1.ConditionTrue, ReasonPortNotSupported, "3868/SCTP")
	if evs := h.events(); !hasEvent(evs, "Warning SyncLoadBalancerFailed") {
		t.Errorf("events = %v, want a warning", evs)
	}
	if b, ok := h.balancer("ns/web"); ok || len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("a refused Service got load balancer %+v, ingress %+v", b, svc.Status.LoadBalancer.Ingress)
	}

	svc.Spec.Ports[1].Protocol = corev1.ProtocolTCP
	h.update(svc)
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	svc = h.service("ns", "web")
	wantCondition(t, svc, ConditionPortsError, metav1.ConditionFalse, ReasonPortsAccepted)
	if got := svc.Status.LoadBalancer.Ingress; len(got) != 1 || got[0].IP != h.vip("ns/web") {
		t.Errorf("ingress = %+v, want the cloud's address", got)
	}
}

// A failed node update leaves the load balancer serving the previous nodes:
// Serving stays True, Provisioning says why the update is retried.
func TestConditionsFailedNodeUpdateKeepsServing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	h.c.nodes.upsert(node("n2"))
	h.lb.FailNext("UpdateLoadBalancer", errors.New("backend pool busy"))
	if _, err := h.c.Reconcile(ctx, k); err == nil {
		t.Fatal("no error")
	}
	svc := h.service("ns", "web")
	wantCondition(t, svc, ConditionServing, metav1.ConditionTrue, ReasonEnsuredLoadBalancer)
	wantCondition(t, svc, ConditionProvisioning, metav1.ConditionTrue, ReasonRetryingAfterError, "backend pool busy", "next retry at")
}

// A refused update of a serving load balancer leaves it serving the spec
// last ensured: Serving stays True and says so, with the refusal and the
// next retry; Provisioning=True carries the refusal.
func TestConditionsRefusedUpdateKeepsServing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	svc := h.service("ns", "web")
	svc.Annotations = map[string]string{"example.com/idle-timeout": "forever"}
	h.update(svc)
	h.lb.FailNext("EnsureLoadBalancer", errors.New(`annotation example.com/idle-timeout "forever": want a duration`))
	if _, err := h.c.Reconcile(ctx, k); err == nil {
		t.Fatal("the refused update reported no error")
	}
	svc = h.service("ns", "web")
	wantCondition(t, svc, ConditionServing, metav1.ConditionTrue, ReasonServingPreviousSpec,
		h.vip("ns/web"), "as last ensured", `"forever": want a duration`, "next retry at")
	wantCondition(t, svc, ConditionProvisioning, metav1.ConditionTrue, ReasonRetryingAfterError, `"forever"`)
}

// Observe mode and Services of another class get no conditions; a Service
// that stops being a LoadBalancer loses the controller's own.
func TestConditionsNotWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("observe", func(t *testing.T) {
		h := newHarness(t, Config{NoConditions: true}, lbService("ns", "web"), node("n1"))
		if _, err := h.c.Reconcile(ctx, key{Service: nn("ns/web")}); err != nil {
			t.Fatal(err)
		}
		if cs := h.service("ns", "web").Status.Conditions; len(cs) != 0 {
			t.Errorf("observe mode wrote conditions %+v", cs)
		}
	})
	t.Run("another class", func(t *testing.T) {
		h := newHarness(t, Config{}, lbService("ns", "web", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/other") }), node("n1"))
		if _, err := h.c.Reconcile(ctx, key{Service: nn("ns/web")}); err != nil {
			t.Fatal(err)
		}
		if cs := h.service("ns", "web").Status.Conditions; len(cs) != 0 {
			t.Errorf("a Service of another class got conditions %+v", cs)
		}
	})
	t.Run("type changed", func(t *testing.T) {
		h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
		k := key{Service: nn("ns/web")}
		if _, err := h.c.Reconcile(ctx, k); err != nil {
			t.Fatal(err)
		}
		svc := h.service("ns", "web")
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		h.update(svc)
		if _, err := h.c.Reconcile(ctx, k); err != nil {
			t.Fatal(err)
		}
		if cs := h.service("ns", "web").Status.Conditions; len(cs) != 0 {
			t.Errorf("a Service that no longer wants a load balancer keeps %+v", cs)
		}
	})
}

// A provider error longer than a message may be keeps the retry time and
// the start of the error; the 10 KB value is quoted by its start and length.
func TestConditionsBoundLongErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	long := fmt.Errorf("annotation example.com/interval: invalid value %q: want a duration", strings.Repeat("9", 10240))
	h.lb.FailNext("EnsureLoadBalancer", long)
	if _, err := h.c.Reconcile(context.Background(), key{Service: nn("ns/web")}); err == nil {
		t.Fatal("no error")
	}
	c := meta.FindStatusCondition(h.service("ns", "web").Status.Conditions, ConditionServing)
	if c == nil || len(c.Message) > kit.MaxMessage || !strings.HasPrefix(c.Message, "next retry at ") ||
		!strings.Contains(c.Message, "(10242 bytes)") || !strings.Contains(c.Message, "want a duration") {
		t.Errorf("Serving condition %+v: want the retry time, the value quoted by its length, the error's end, under %d bytes", c, kit.MaxMessage)
	}
}

// A new load balancer costs the API server what upstream's costs: the
// finalizer, then one status write that carries the ingress and the
// conditions together; a node change that settles writes no condition.
func TestNewLoadBalancerCostsTwoWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	k := key{Service: nn("ns/web")}
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	if n := h.writes.Load(); n != 2 {
		t.Errorf("a new load balancer made %d API writes, want 2 (finalizer, status with conditions)", n)
	}
	svc := h.service("ns", "web")
	wantCondition(t, svc, ConditionServing, metav1.ConditionTrue, ReasonEnsuredLoadBalancer, h.vip("ns/web"))
	wantCondition(t, svc, ConditionProvisioning, metav1.ConditionFalse, ReasonProvisioned)

	// A node joins: the node pass updates the load balancer's hosts; the
	// conditions say the same before and after, so nothing is written.
	before := h.writes.Load()
	h.c.nodes.upsert(node("n2"))
	h.c.nodePass(ctx, h.q)
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	if got := h.calls(); len(got) != 2 || !strings.HasPrefix(got[1], "UpdateLoadBalancer") {
		t.Fatalf("cloud calls %v, want the ensure then one UpdateLoadBalancer", got)
	}
	if n := h.writes.Load() - before; n != 0 {
		t.Errorf("a node joining made %d API writes, want 0", n)
	}
}
