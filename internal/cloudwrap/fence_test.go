package cloudwrap

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

const (
	testLease  = 6 * time.Second
	testMargin = 2 * time.Second
)

// renewals is a lease whose renewals the test sets.
type renewals struct {
	mu      sync.Mutex
	sent    time.Time
	holding bool
}

func (r *renewals) LastRenewal() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent, r.holding
}

func (r *renewals) renewed(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent, r.holding = at, true
}

// fencedWorld is a fake provider behind the instrumented wrapper and a
// fence, with the clock, the lease and the give-ups in the test's hands.
type fencedWorld struct {
	provider *fake.Cloud
	cloud    cloud.Cloud
	fence    *Fence
	clock    *clocktesting.FakeClock
	lease    *renewals
	gaveUp   []error
}

func newFencedWorld(t *testing.T) *fencedWorld {
	t.Helper()
	w := &fencedWorld{provider: &fake.Cloud{EnableInstancesV1: true}, clock: clocktesting.NewFakeClock(time.Now()), lease: &renewals{}}
	var err error
	w.fence, err = NewFence(FenceOptions{Lease: w.lease, LeaseDuration: testLease, Margin: testMargin, Clock: w.clock,
		GiveUp: func(err error) { w.gaveUp = append(w.gaveUp, err) }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Instrument(w.provider, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.cloud = WithFence(c, w.fence)
	return w
}

var fenceSvc = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}

// mutations makes every mutating call the wrapper has once, returning each
// one's error by operation.
func mutations(t *testing.T, c cloud.Cloud) map[string]error {
	t.Helper()
	ctx := context.Background()
	lb, ok := c.LoadBalancer()
	if !ok {
		t.Fatal("no LoadBalancer")
	}
	r, ok := c.Routes()
	if !ok {
		t.Fatal("no Routes")
	}
	in, ok := c.Instances()
	if !ok {
		t.Fatal("no Instances")
	}
	route := &cloudprovider.Route{Name: "r", TargetNode: "n1", DestinationCIDR: "10.0.0.0/24"}
	out := map[string]error{}
	_, out["EnsureLoadBalancer"] = lb.EnsureLoadBalancer(ctx, "c", fenceSvc, nil)
	out["UpdateLoadBalancer"] = lb.UpdateLoadBalancer(ctx, "c", fenceSvc, nil)
	out["EnsureLoadBalancerDeleted"] = lb.EnsureLoadBalancerDeleted(ctx, "c", fenceSvc)
	out["CreateRoute"] = r.CreateRoute(ctx, "c", "hint", route)
	out["DeleteRoute"] = r.DeleteRoute(ctx, "c", route)
	out["AddSSHKeyToAllInstances"] = in.AddSSHKeyToAllInstances(ctx, "user", []byte("key"))
	return out
}

// The fence is open while the last renewal is younger than the lease
// duration minus the margin: every mutating call reaches the provider.
func TestFenceOpenAfterRecentRenewal(t *testing.T) {
	w := newFencedWorld(t)
	w.lease.renewed(w.clock.Now())
	w.clock.Step(testLease - testMargin - time.Millisecond)
	for op, err := range mutations(t, w.cloud) {
		if errors.Is(err, ErrNotLeader) {
			t.Errorf("%s refused %s after a renewal: %v", op, testLease-testMargin-time.Millisecond, err)
		}
		if n := w.provider.CallCount(op); n != 1 {
			t.Errorf("%s reached the provider %d times, want 1", op, n)
		}
	}
	if len(w.gaveUp) != 0 || w.fence.Closed() {
		t.Errorf("gave up leadership with an open fence: %v", w.gaveUp)
	}
}

// At the lease duration minus the margin since the renewal's request was
// sent, every mutating call is refused before the provider, with an error
// that says why, and leadership is given up, once.
func TestFenceClosesAtLeaseDurationMinusMargin(t *testing.T) {
	w := newFencedWorld(t)
	w.lease.renewed(w.clock.Now())
	w.clock.Step(testLease - testMargin)
	for op, err := range mutations(t, w.cloud) {
		if !errors.Is(err, ErrNotLeader) {
			t.Errorf("%s with the last renewal %s ago: %v, want ErrNotLeader", op, testLease-testMargin, err)
			continue
		}
		want := "cloud " + op + ": not provably the leader: last renewal 4s ago, lease duration 6s"
		if err.Error() != want {
			t.Errorf("%s: error %q, want %q", op, err, want)
		}
		if n := w.provider.CallCount(op); n != 0 {
			t.Errorf("%s reached the provider %d times behind a closed fence", op, n)
		}
	}
	if len(w.gaveUp) != 1 || !errors.Is(w.gaveUp[0], ErrNotLeader) {
		t.Fatalf("leadership given up %d times (%v), want once with the refusal", len(w.gaveUp), w.gaveUp)
	}
}

// A closed fence stays closed: a renewal that succeeds afterwards (a pause
// shorter than the lease) does not let the replica act again, since it
// has given up leadership.
func TestFenceStaysClosed(t *testing.T) {
	w := newFencedWorld(t)
	w.lease.renewed(w.clock.Now())
	w.clock.Step(time.Minute)
	lb, _ := w.cloud.LoadBalancer()
	if _, err := lb.EnsureLoadBalancer(context.Background(), "c", fenceSvc, nil); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("EnsureLoadBalancer a minute after the last renewal: %v, want ErrNotLeader", err)
	}
	w.lease.renewed(w.clock.Now())
	err := lb.UpdateLoadBalancer(context.Background(), "c", fenceSvc, nil)
	if !errors.Is(err, ErrNotLeader) || !strings.Contains(err.Error(), "last renewal 1m0s ago") {
		t.Errorf("UpdateLoadBalancer after a later renewal: %v, want the first refusal again", err)
	}
	if len(w.gaveUp) != 1 {
		t.Errorf("leadership given up %d times, want once", len(w.gaveUp))
	}
}

// A replica that never renewed, or no longer holds the lease, is refused.
func TestFenceClosedWithoutTheLease(t *testing.T) {
	w := newFencedWorld(t)
	r, _ := w.cloud.Routes()
	err := r.CreateRoute(context.Background(), "c", "hint", &cloudprovider.Route{Name: "r", TargetNode: "n1", DestinationCIDR: "10.0.0.0/24"})
	if !errors.Is(err, ErrNotLeader) || !strings.Contains(err.Error(), "does not hold the lease") {
		t.Errorf("CreateRoute before any renewal: %v, want a refusal saying the lease is not held", err)
	}
	if len(w.gaveUp) != 1 {
		t.Errorf("leadership given up %d times, want once", len(w.gaveUp))
	}
}

// Reads pass a closed fence: a replica that lost the lease may still look.
func TestFenceLetsReadsThrough(t *testing.T) {
	w := newFencedWorld(t)
	_ = w.fence.Check(context.Background()) // closes the fence: never renewed
	lb, _ := w.cloud.LoadBalancer()
	if _, _, err := lb.GetLoadBalancer(context.Background(), "c", fenceSvc); err != nil {
		t.Errorf("GetLoadBalancer behind a closed fence: %v", err)
	}
	r, _ := w.cloud.Routes()
	if _, err := r.ListRoutes(context.Background(), "c"); err != nil {
		t.Errorf("ListRoutes behind a closed fence: %v", err)
	}
	if l, ok := w.cloud.LoadBalancerLister(); !ok {
		t.Error("the fenced cloud hides the LoadBalancerLister extension")
	} else if _, err := l.ListLoadBalancers(context.Background(), "c"); err != nil {
		t.Errorf("ListLoadBalancers behind a closed fence: %v", err)
	}
}

// Without leader election there is no fence: WithFence returns the
// wrapper as it is, and a nil fence is open.
func TestNoFenceWithoutElection(t *testing.T) {
	p := &fake.Cloud{EnableInstancesV1: true}
	c, err := Instrument(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fenced := WithFence(c, nil)
	if fenced != cloud.Cloud(c) {
		t.Errorf("WithFence(c, nil) = %T, want c itself", fenced)
	}
	for op, err := range mutations(t, fenced) {
		if errors.Is(err, ErrNotLeader) {
			t.Errorf("%s refused without leader election: %v", op, err)
		}
	}
	var none *Fence
	if err := none.Check(context.Background()); err != nil || none.Closed() {
		t.Errorf("nil fence: Check = %v, Closed = %v; want open", err, none.Closed())
	}
}

func TestNewFenceRefusesAMarginAboveTheLease(t *testing.T) {
	if _, err := NewFence(FenceOptions{Lease: &renewals{}, LeaseDuration: testLease, Margin: testLease}); err == nil {
		t.Error("a margin as long as the lease was accepted: the fence would never open")
	}
}
