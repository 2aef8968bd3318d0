package leader

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// slowLock is a Lease whose writes take a while on the test's clock, as a
// request answered late (or a process paused while it waited) does.
type slowLock struct {
	clk     *clocktesting.FakePassiveClock
	took    time.Duration
	holder  string
	updates int
}

func (s *slowLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: s.holder, LeaseDurationSeconds: 6}
	raw, err := json.Marshal(rec)
	return &rec, raw, err
}

func (s *slowLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return s.Update(ctx, ler)
}

func (s *slowLock) Update(_ context.Context, ler resourcelock.LeaderElectionRecord) error {
	s.clk.SetTime(s.clk.Now().Add(s.took))
	s.holder = ler.HolderIdentity
	s.updates++
	return nil
}

func (s *slowLock) RecordEvent(string) {}
func (s *slowLock) Identity() string   { return "me" }
func (s *slowLock) Describe() string   { return "kube-system/ccm" }
func (s *slowLock) setHolder(h string) { s.holder = h }

// A renewal counts from when its request was sent, not from its answer:
// the API server may have written it any time in between, and another
// replica times the lease from when it saw the write.
func TestRenewalTimedFromTheRequest(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	inner := &slowLock{clk: clk, took: 3 * time.Second}
	l := newObservedLock(inner, clk)
	if _, holding := l.LastRenewal(); holding {
		t.Fatal("holding before any write")
	}
	sent := clk.Now()
	if err := l.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if got, holding := l.LastRenewal(); !holding || !got.Equal(sent) {
		t.Errorf("after an acquisition sent at %v and answered 3s later: LastRenewal = %v, %v; want %v, true", sent, got, holding, sent)
	}
	sent = clk.Now()
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.LastRenewal(); !got.Equal(sent) {
		t.Errorf("renewal sent at %v: LastRenewal = %v", sent, got)
	}
	// A failed renewal leaves the last successful one.
	failing := newObservedLock(&fakeLock{err: apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ccm", errors.New("changed"))}, clk)
	if err := failing.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err == nil {
		t.Fatal("the conflict was lost")
	}
	if got, holding := failing.LastRenewal(); holding || !got.IsZero() {
		t.Errorf("a failed renewal counted: %v, %v", got, holding)
	}
}

// Giving up leadership after the fence closed must not free the Lease of
// the replica that took over: client-go's elector releases on the strength
// of its own last observation, which may predate the takeover.
func TestReleaseLeavesAnotherHoldersLease(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	inner := &slowLock{clk: clk}
	l := newObservedLock(inner, clk)
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	inner.setHolder("standby")
	if _, _, err := l.Get(ctx); err != nil { // the release reads first
		t.Fatal(err)
	}
	writes := inner.updates
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatalf("release: %v", err)
	}
	if inner.updates != writes || inner.holder != "standby" {
		t.Errorf("the release wrote the Lease the standby holds: holder now %q", inner.holder)
	}
	if _, holding := l.LastRenewal(); holding || l.Holding() {
		t.Error("still holding after giving up")
	}

	// Its own Lease it does release.
	inner.setHolder("me")
	if _, _, err := l.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil || inner.holder != "" {
		t.Errorf("release of its own Lease: %v, holder %q", err, inner.holder)
	}
}

var errFenced = errors.New("not provably the leader: last renewal 9s ago, lease duration 6s")

// The controllers' client refuses every write while the fence is closed,
// a Node's deletion first, naming the object; reads pass.
func TestFenceClientRefusesWrites(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	inner := fake.NewClientBuilder().WithObjects(node, svc).WithStatusSubresource(svc).Build()
	var closed error
	c := FenceClient(inner, func(context.Context) error { return closed })

	closed = errFenced
	err := c.Delete(ctx, node.DeepCopy())
	if !errors.Is(err, errFenced) || !strings.HasPrefix(err.Error(), "delete Node node-1: not provably the leader") {
		t.Errorf("Delete of a Node behind a closed fence: %v", err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	if err := c.Patch(ctx, node.DeepCopy(), patch); !errors.Is(err, errFenced) {
		t.Errorf("Patch of a Node behind a closed fence: %v", err)
	}
	if err := c.Update(ctx, node.DeepCopy()); !errors.Is(err, errFenced) {
		t.Errorf("Update of a Node behind a closed fence: %v", err)
	}
	if err := c.Status().Update(ctx, svc.DeepCopy()); !errors.Is(err, errFenced) {
		t.Errorf("status Update of a Service behind a closed fence: %v", err)
	}
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}); !errors.Is(err, errFenced) {
		t.Errorf("Create behind a closed fence: %v", err)
	}
	var got corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: "node-1"}, &got); err != nil {
		t.Errorf("Get behind a closed fence: %v", err)
	}
	if err := inner.Get(ctx, types.NamespacedName{Name: "node-1"}, &got); err != nil {
		t.Errorf("the Node is gone after its refused deletion: %v", err)
	}

	closed = nil
	if err := c.Delete(ctx, node.DeepCopy()); err != nil {
		t.Errorf("Delete behind an open fence: %v", err)
	}
	if err := inner.Get(ctx, types.NamespacedName{Name: "node-1"}, &got); !apierrors.IsNotFound(err) {
		t.Errorf("the Node after its deletion behind an open fence: %v", err)
	}
}
