package node

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

func newTestBatcher(t *testing.T, fc *fakeCloud, interval time.Duration) *batcher {
	t.Helper()
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return newBatcher(fc, interval, time.Minute, m)
}

func TestBatcherCoalescesConcurrentCallers(t *testing.T) {
	fc := newFakeCloud(instance("n1", "10.0.0.1", "203.0.113.1"))
	fc.listDelay = 50 * time.Millisecond
	b := newTestBatcher(t, fc, time.Millisecond)
	seen := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			if _, err := b.Get(context.Background(), seen); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := fc.listCalls.Load(); got != 1 {
		t.Errorf("list calls = %d, want 1 for 100 concurrent callers", got)
	}
}

func TestBatcherReusesAnswerNewerThanNotBefore(t *testing.T) {
	fc := newFakeCloud()
	b := newTestBatcher(t, fc, time.Millisecond)
	seen := time.Now()
	for range 5 {
		if _, err := b.Get(context.Background(), seen); err != nil {
			t.Fatal(err)
		}
	}
	if got := fc.listCalls.Load(); got != 1 {
		t.Errorf("list calls = %d, want 1", got)
	}
	// A Node seen after that answer started needs a new list.
	if _, err := b.Get(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := fc.listCalls.Load(); got != 2 {
		t.Errorf("list calls = %d, want 2", got)
	}
}

func TestBatcherWaitsForNewerCallWhenInFlightIsTooOld(t *testing.T) {
	fc := newFakeCloud()
	fc.listDelay = 100 * time.Millisecond
	b := newTestBatcher(t, fc, time.Millisecond)
	first := make(chan *snapshot, 1)
	go func() {
		s, _ := b.Get(context.Background(), time.Now())
		first <- s
	}()
	time.Sleep(30 * time.Millisecond) // the first call is in flight
	fc.put(instance("late", "10.0.0.2", "203.0.113.2"))
	s, err := b.Get(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if old := <-first; old == s {
		t.Fatal("a caller seen after the call started got that call's answer")
	}
	if _, ok, _ := s.Lookup(newNode("late")); !ok {
		t.Error("the newer answer lacks the instance created before it")
	}
	if got := fc.listCalls.Load(); got != 2 {
		t.Errorf("list calls = %d, want 2", got)
	}
}

func TestBatcherRateLimitsCalls(t *testing.T) {
	fc := newFakeCloud()
	b := newTestBatcher(t, fc, 200*time.Millisecond)
	start := time.Now()
	for range 3 {
		if _, err := b.Get(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// Three calls need two full intervals between their starts.
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Errorf("3 calls took %s; want at least 2 intervals of 200ms", el)
	}
}

func TestBatcherSharesErrors(t *testing.T) {
	fc := newFakeCloud()
	boom := errors.New("boom")
	fc.setErr(boom)
	b := newTestBatcher(t, fc, time.Millisecond)
	if _, err := b.Get(context.Background(), time.Now()); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	fc.setErr(nil)
	if _, err := b.Get(context.Background(), time.Now()); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}

func TestBatcherCallerCancellation(t *testing.T) {
	fc := newFakeCloud()
	fc.listDelay = time.Second
	b := newTestBatcher(t, fc, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Get(ctx, time.Now()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
}

func TestSnapshotLookup(t *testing.T) {
	a := instance("a", "10.0.0.1", "203.0.113.1")
	dup1, dup2 := instance("dup", "10.0.0.2", "203.0.113.2"), instance("dup", "10.0.0.3", "203.0.113.3")
	dup2.ProviderID = "fake://dup-2"
	s := newSnapshot(time.Now(), []cloud.Instance{a, dup1, dup2})

	byID := newNode("renamed")
	byID.Spec.ProviderID = "fake://a"
	if inst, ok, err := s.Lookup(byID); err != nil || !ok || inst.Name != "a" {
		t.Errorf("by providerID: %v %v %v", inst, ok, err)
	}
	if _, ok, err := s.Lookup(newNode("a")); err != nil || !ok {
		t.Errorf("by name: %v %v", ok, err)
	}
	stale := newNode("a")
	stale.Spec.ProviderID = "fake://old"
	if _, ok, _ := s.Lookup(stale); ok {
		t.Error("a providerID absent from the list matched by name")
	}
	if _, _, err := s.Lookup(newNode("dup")); !errors.Is(err, errAmbiguousName) {
		t.Errorf("duplicate name: err = %v", err)
	}
}
