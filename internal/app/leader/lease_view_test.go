package leader

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

// The standby's cache warmer reads the Lease as the lock last saw it, and
// is woken when that changes: a new version of the Lease (a renewal, a
// release) or this replica starting to hold it. The same version read
// again is no change.
func TestLockViewAndChanges(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	l := newObservedLock(&fakeLock{}, clk)
	woken := func() bool {
		select {
		case <-l.changes:
			return true
		default:
			return false
		}
	}
	if v := l.view(); !v.Seen.IsZero() || v.Holder != "" || v.Leading {
		t.Fatalf("view before any read = %+v, want it empty", v)
	}
	l.see(&resourcelock.LeaderElectionRecord{HolderIdentity: "other", LeaseDurationSeconds: 15}, []byte("v1"))
	if !woken() {
		t.Fatal("a new version of the Lease did not wake the warmer")
	}
	if v := l.view(); v.Holder != "other" || !v.Seen.Equal(clk.Now()) || v.Leading {
		t.Fatalf("view = %+v, want held by other, seen now", v)
	}
	clk.SetTime(clk.Now().Add(2 * time.Second))
	l.see(&resourcelock.LeaderElectionRecord{HolderIdentity: "other", LeaseDurationSeconds: 15}, []byte("v1"))
	if woken() || !l.view().Seen.Equal(time.Unix(1000, 0)) {
		t.Fatal("the same version read again counted as a renewal")
	}
	l.see(&resourcelock.LeaderElectionRecord{HolderIdentity: "", LeaseDurationSeconds: 15}, []byte("v2"))
	if !woken() || l.view().Holder != "" {
		t.Fatalf("a released Lease: view %+v, want it free and the warmer woken", l.view())
	}
	if err := l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if !woken() || !l.view().Leading || !l.Holding() {
		t.Fatalf("after taking the Lease: view %+v, Holding %v, want leading and the warmer woken", l.view(), l.Holding())
	}
	if err := l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if woken() {
		t.Fatal("a renewal by the holder itself woke the warmer")
	}
}
