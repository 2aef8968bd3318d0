package leader

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
	ready := l.ReadyCheck(15 * time.Second)
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
	live := l.LiveCheck(15 * time.Second)
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

// recordLock serves a record a test controls and keeps the last update.
type recordLock struct {
	fakeLock
	rec     resourcelock.LeaderElectionRecord
	raw     string
	updated *resourcelock.LeaderElectionRecord
}

func (r *recordLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec := r.rec
	return &rec, []byte(r.raw), nil
}

func (r *recordLock) Update(_ context.Context, ler resourcelock.LeaderElectionRecord) error {
	if r.err != nil {
		return r.err
	}
	r.updated, r.rec, r.raw = &ler, ler, "written"
	return nil
}

// standbyLock is a standby's lock over inner whose waits advance clk and
// are recorded in waited.
func standbyLock(inner resourcelock.Interface, clk *clocktesting.FakeClock, waited *[]time.Duration, during func()) *Lock {
	l := newObservedLock(inner, clk)
	l.maxGap, l.leaseDuration = 4400*time.Millisecond, 15*time.Second
	l.sleep = func(_ context.Context, d time.Duration) error {
		*waited = append(*waited, d)
		clk.Step(d)
		if during != nil {
			during()
		}
		return nil
	}
	return l
}

// A standby reads the Lease when its elector asks. Only when the holder's
// lease (as this replica last saw it renewed) expires before the elector's
// next attempt does the read wait, until just past the expiry, and then
// take the Lease if nobody renewed it meanwhile, as the elector would.
func TestStandbyTakesTheLeaseAtExpiry(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1000, 0)
	clk := clocktesting.NewFakeClock(t0)
	inner := &recordLock{rec: resourcelock.LeaderElectionRecord{HolderIdentity: "other", LeaseDurationSeconds: 15, LeaderTransitions: 3}, raw: "v1"}
	var waited []time.Duration
	l := standbyLock(inner, clk, &waited, nil)
	read := func(at time.Duration) *resourcelock.LeaderElectionRecord {
		t.Helper()
		clk.SetTime(t0.Add(at))
		rec, _, err := l.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	read(0) // first sight of v1: no wait
	read(3 * time.Second)
	read(9 * time.Second) // the expiry (15s) is 6s away, past the next attempt
	if len(waited) != 0 || inner.updated != nil {
		t.Fatalf("waited %v (update %v) with more than a retry gap of lease left", waited, inner.updated)
	}
	inner.raw = "v2" // the holder renews at 10s: its lease now ends at 25s
	read(10 * time.Second)
	rec := read(22 * time.Second)
	if want := 3*time.Second + expiryMargin; len(waited) != 1 || waited[0] != want {
		t.Fatalf("waited %v, want [%v]", waited, want)
	}
	if inner.updated == nil || rec.HolderIdentity != "me" || rec.LeaderTransitions != 4 || rec.LeaseDurationSeconds != 15 ||
		!rec.AcquireTime.Time.Equal(t0.Add(25*time.Second+expiryMargin)) {
		t.Fatalf("after the expiry: read %+v, wrote %+v; want the lease taken by me, transition 4", rec, inner.updated)
	}
	// Holding it, the elector's reads never wait.
	read(40 * time.Second)
	read(53 * time.Second)
	if len(waited) != 1 {
		t.Fatalf("the holder waited: %v", waited)
	}
}

// A lease renewed during the wait, held by nobody, or taken first by
// another replica is not taken.
func TestStandbyLeavesARenewedLease(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1000, 0)
	clk := clocktesting.NewFakeClock(t0)
	inner := &recordLock{rec: resourcelock.LeaderElectionRecord{HolderIdentity: "other", LeaseDurationSeconds: 15}, raw: "v1"}
	var waited []time.Duration
	l := standbyLock(inner, clk, &waited, func() { inner.raw = "v2" })
	_, _, _ = l.Get(ctx)
	clk.SetTime(t0.Add(13 * time.Second))
	rec, raw, err := l.Get(ctx)
	if err != nil || len(waited) != 1 || inner.updated != nil || rec.HolderIdentity != "other" || string(raw) != "v2" {
		t.Fatalf("renewed during the wait: waited %v, read %+v %q %v, wrote %+v", waited, rec, raw, err, inner.updated)
	}

	inner = &recordLock{rec: resourcelock.LeaderElectionRecord{HolderIdentity: "other", LeaseDurationSeconds: 15}, raw: "v1"}
	l = standbyLock(inner, clk, &waited, func() { inner.err = errors.New("conflict") })
	clk.SetTime(t0)
	_, _, _ = l.Get(ctx)
	clk.SetTime(t0.Add(13 * time.Second))
	if rec, _, err := l.Get(ctx); err != nil || rec.HolderIdentity != "other" {
		t.Fatalf("update lost to another replica: read %+v, %v; want the holder as read", rec, err)
	}

	free := &recordLock{rec: resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 15}, raw: "free"}
	waited = nil
	l = standbyLock(free, clk, &waited, nil)
	clk.SetTime(t0)
	_, _, _ = l.Get(ctx)
	clk.SetTime(t0.Add(13 * time.Second))
	_, _, _ = l.Get(ctx)
	if len(waited) != 0 || free.updated != nil {
		t.Fatalf("a free lease: waited %v, wrote %+v; the elector takes it itself", waited, free.updated)
	}
}

// A wait for the expiry ends with the elector's context.
func TestStandbyWaitEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	inner := &recordLock{rec: resourcelock.LeaderElectionRecord{HolderIdentity: "other", LeaseDurationSeconds: 15}, raw: "v1"}
	l := newObservedLock(inner, clk)
	l.maxGap, l.sleep, l.leaseDuration = 4400*time.Millisecond, WaitContext, 15*time.Second
	if _, _, err := l.Get(ctx); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(time.Unix(1013, 0))
	cancel()
	if _, _, err := l.Get(ctx); !errors.Is(err, context.Canceled) || inner.updated != nil {
		t.Fatalf("Get after cancel while waiting for the expiry: %v (wrote %+v)", err, inner.updated)
	}
}
