package app

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLock answers with err, counting nothing; the elector's real lock is
// exercised by the daemon tests.
type fakeLock struct{ err error }

func (f *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{}, nil, f.err
}
func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return f.err }
func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return f.err }
func (f *fakeLock) RecordEvent(string)                                              {}
func (f *fakeLock) Identity() string                                                { return "me" }
func (f *fakeLock) Describe() string                                                { return "kube-system/ccm" }

func TestLeaseReadiness(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	inner := &fakeLock{}
	l := newObservedLock(inner, clk)
	ready := l.readyCheck(15 * time.Second)
	req := &http.Request{}
	if err := ready.Check(req); err == nil {
		t.Fatal("ready before any lease request")
	}
	// A standby only reads the Lease; a missing Lease still means the
	// client works (the elector creates it next).
	inner.err = apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ccm")
	_, _, _ = l.Get(ctx)
	if err := ready.Check(req); err != nil {
		t.Fatalf("not ready after a NotFound read: %v", err)
	}
	clk.SetTime(clk.Now().Add(10 * time.Second))
	inner.err = errors.New("connection refused")
	_, _, _ = l.Get(ctx)
	if err := ready.Check(req); err != nil {
		t.Fatalf("one failed read within the window made it unready: %v", err)
	}
	clk.SetTime(clk.Now().Add(6 * time.Second))
	if err := ready.Check(req); err == nil {
		t.Fatal("still ready 16s after the last successful lease request")
	}
	inner.err = apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ccm", errors.New("rbac"))
	_, _, _ = l.Get(ctx)
	if err := ready.Check(req); err == nil {
		t.Fatal("a forbidden read made it ready")
	}
}

func TestLeaseLiveness(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	inner := &fakeLock{}
	l := newObservedLock(inner, clk)
	live := l.liveCheck(15 * time.Second)
	req := &http.Request{}
	clk.SetTime(clk.Now().Add(time.Hour))
	if err := live.Check(req); err != nil {
		t.Fatalf("a standby that never led is not live: %v", err)
	}
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(30 * time.Second))
	if err := live.Check(req); err != nil {
		t.Fatalf("leader within lease+tolerance is not live: %v", err)
	}
	inner.err = errors.New("timeout")
	_ = l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	clk.SetTime(clk.Now().Add(6 * time.Second))
	if err := live.Check(req); err == nil {
		t.Fatal("a leader 36s past its last renewal (lease 15s + 20s) is live")
	}
	// Releasing (holder emptied) makes it a standby again.
	inner.err = nil
	_ = l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: ""})
	clk.SetTime(clk.Now().Add(time.Hour))
	if err := live.Check(req); err != nil {
		t.Fatalf("after release: %v", err)
	}
}
