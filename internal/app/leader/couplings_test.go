package leader

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// A behaviour of client-go's elector that the Lease lock relies on is
// nowhere documented. This test fails, saying what to re-check, when an
// upgrade changes it (internal/app pins the other such coupling, with
// controller-runtime's manager).

// Lock.takeExpired writes the Lease behind client-go's elector and
// hands the elector the record it wrote, naming this replica as holder,
// fresh. That saves the takeover a retry period only because the elector,
// reading a fresh record that names itself, renews it at once as the
// leader it now is (one Update, no new transition) instead of waiting for
// the lease to expire as it does for another holder's.
func TestCouplingElectorRenewsAFreshRecordNamingItself(t *testing.T) {
	t.Parallel()
	now := metav1.NewTime(time.Now())
	lock := &memLock{id: "me", rec: resourcelock.LeaderElectionRecord{
		HolderIdentity: "me", LeaseDurationSeconds: 60, AcquireTime: now, RenewTime: now, LeaderTransitions: 7,
	}}
	started := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 60 * time.Second, RenewDeadline: 40 * time.Second, RetryPeriod: 20 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(started) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); le.Run(ctx) }()
	select {
	case <-started:
	case <-time.After(10 * time.Second): // the first attempt is immediate; the next would come 20 s later
		t.Fatal("client-go's elector did not lead at its first attempt on a fresh record naming itself: " +
			"Lock.takeExpired (lease.go) relies on that to take an expired lease at once; re-check it against this client-go")
	}
	cancel()
	<-done
	rec, updates := lock.snapshot()
	if updates < 1 || rec.HolderIdentity != "me" || rec.LeaderTransitions != 7 {
		t.Errorf("the elector led with %d updates, holder %q, transitions %d; want it to renew (transitions stay 7): "+
			"Lock.takeExpired (lease.go) writes the takeover's transition itself", updates, rec.HolderIdentity, rec.LeaderTransitions)
	}
}

// memLock is a resourcelock.Interface over one record in memory.
type memLock struct {
	mu      sync.Mutex
	id      string
	rec     resourcelock.LeaderElectionRecord
	updates int
}

func (l *memLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.rec
	raw, err := json.Marshal(rec)
	return &rec, raw, err
}

func (l *memLock) Create(_ context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.Update(context.Background(), ler)
}

func (l *memLock) Update(_ context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec = ler
	l.updates++
	return nil
}

func (l *memLock) snapshot() (resourcelock.LeaderElectionRecord, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec, l.updates
}

func (l *memLock) RecordEvent(string) {}
func (l *memLock) Identity() string   { return l.id }
func (l *memLock) Describe() string   { return "memory/lease" }
