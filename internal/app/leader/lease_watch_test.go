package leader

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// A renewal seen through the watch dates the lease from when it was
// written, not from the elector's next read: the wait for its expiry is
// counted from there, and the record is the one a read returns.
func TestWatchedRenewalDatesTheExpiry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ccm"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](15)}}
	cs := fake.NewClientset(lease.DeepCopy())
	t0 := time.Unix(1000, 0)
	clk := clocktesting.NewFakeClock(t0)
	l := newObservedLock(&fakeLock{}, clk)
	l.maxGap, l.leaseDuration = 4400*time.Millisecond, 15*time.Second
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.watchLease(ctx, cs.CoordinationV1().Leases("kube-system"), "ccm", time.Millisecond)
	}()

	var want []byte
	renewals := 0
	// Renew until the watch, which starts concurrently, has seen one.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		renewals++
		lease.Spec.RenewTime = &metav1.MicroTime{Time: t0.Add(time.Duration(renewals) * time.Second)}
		if _, err := cs.CoordinationV1().Leases("kube-system").Update(ctx, lease.DeepCopy(), metav1.UpdateOptions{}); err != nil {
			return false, err
		}
		raw, err := json.Marshal(*resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec))
		if err != nil {
			return false, err
		}
		want = raw
		l.mu.Lock()
		defer l.mu.Unlock()
		return string(l.seenRaw) == string(want), nil
	}); err != nil {
		t.Fatalf("the watched renewal never reached the lock: %v", err)
	}
	if l.seenHolder != "other" || l.seenDuration != 15*time.Second || !l.seenAt.Equal(t0) {
		t.Fatalf("seen holder %q for %v at %v; want other, 15s, %v", l.seenHolder, l.seenDuration, l.seenAt, t0)
	}
	clk.SetTime(t0.Add(13 * time.Second))
	if d := l.untilExpiry(); d != 2*time.Second+expiryMargin {
		t.Fatalf("13s after the watched renewal: wait %v for the expiry, want %v", d, 2*time.Second+expiryMargin)
	}
	cancel()
	<-done
}

// Without the watch permission the watch gives up at once; reads alone keep
// the view.
func TestLeaseWatchForbiddenGivesUp(t *testing.T) {
	cs := fake.NewClientset()
	calls := 0
	cs.PrependWatchReactor("leases", func(k8stesting.Action) (bool, watch.Interface, error) {
		calls++
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ccm", nil)
	})
	l := newObservedLock(&fakeLock{}, clocktesting.NewFakeClock(time.Unix(1000, 0)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.watchLease(context.Background(), cs.CoordinationV1().Leases("kube-system"), "ccm", time.Millisecond)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch kept retrying after a Forbidden answer")
	}
	if calls != 1 {
		t.Fatalf("%d watch attempts, want 1", calls)
	}
}
