package node

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func newTestBatcher(t *testing.T, fc *cloudfake.Cloud, interval time.Duration, clk clock.Clock) *batcher {
	t.Helper()
	return newPushbackBatcher(t, fc, interval, clk, nil)
}

// newPushbackBatcher is newTestBatcher with a view of the cloud's
// pushback (nil: always batching).
func newPushbackBatcher(t *testing.T, fc *cloudfake.Cloud, interval time.Duration, clk clock.Clock, batching func() bool) *batcher {
	t.Helper()
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return newBatcher(fc, interval, time.Minute, batching, m, clk)
}

// hold makes fc's list calls wait until the test releases them (or the
// test ends).
func hold(t *testing.T, fc *cloudfake.Cloud) (release func()) {
	release = fc.Gate("ListInstances")
	t.Cleanup(release)
	return release
}

// waitFor polls cond, which other goroutines make true.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (b *batcher) waiters() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inflight == nil {
		return 0
	}
	return b.inflight.waiters
}

func TestBatcherCoalescesConcurrentCallers(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1"))
	release := hold(t, fc)
	b := newTestBatcher(t, fc, time.Millisecond, clock.RealClock{})
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
	waitFor(t, "100 callers waiting for one list", func() bool { return b.waiters() == 100 })
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := fc.CallCount("ListInstances"); got != 1 {
		t.Errorf("list calls = %d, want 1 for 100 concurrent callers", got)
	}
}

func TestBatcherReusesAnswerNewerThanNotBefore(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	b := newTestBatcher(t, fc, 0, clk)
	seen := clk.Now()
	for range 5 {
		if _, err := b.Get(context.Background(), seen); err != nil {
			t.Fatal(err)
		}
	}
	if got := fc.CallCount("ListInstances"); got != 1 {
		t.Errorf("list calls = %d, want 1", got)
	}
	// A Node seen after that answer started needs a new list.
	clk.Step(time.Millisecond)
	if _, err := b.Get(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := fc.CallCount("ListInstances"); got != 2 {
		t.Errorf("list calls = %d, want 2", got)
	}
}

func TestBatcherWaitsForNewerCallWhenInFlightIsTooOld(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New()
	release := hold(t, fc)
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	b := newTestBatcher(t, fc, 0, clk)
	first := make(chan *snapshot, 1)
	go func() {
		s, _ := b.Get(context.Background(), clk.Now())
		first <- s
	}()
	waitFor(t, "the first list to be in flight", func() bool { return fc.CallCount("ListInstances") == 1 })
	// A Node seen after that list started, whose instance it may lack.
	clk.Step(time.Millisecond)
	fc.PutInstance(instance("late", "10.0.0.2", "203.0.113.2"))
	second := make(chan *snapshot, 1)
	go func() {
		s, _ := b.Get(context.Background(), clk.Now())
		second <- s
	}()
	release()
	old, s := <-first, <-second
	if old == s {
		t.Fatal("a caller seen after the call started got that call's answer")
	}
	if !s.started.After(old.started) {
		t.Errorf("second answer started %v, not after the first's %v", s.started, old.started)
	}
	if _, ok, _ := s.Lookup(newNode("late")); !ok {
		t.Error("the newer answer lacks the instance created before it")
	}
	if got := fc.CallCount("ListInstances"); got != 2 {
		t.Errorf("list calls = %d, want 2", got)
	}
}

// Calls start at most once per interval, however many callers need a
// newer answer.
func TestBatcherRateLimitsCalls(t *testing.T) {
	t.Parallel()
	const interval = 200 * time.Millisecond
	fc := cloudfake.New()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	b := newTestBatcher(t, fc, interval, clk)
	done := make(chan error, 1)
	go func() {
		for range 3 {
			// Each caller's Node was seen after the last answer started.
			if _, err := b.Get(context.Background(), clk.Now().Add(time.Nanosecond)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	waitFor(t, "the first list", func() bool { return fc.CallCount("ListInstances") == 1 })
	for call := 2; call <= 3; call++ {
		waitFor(t, "the next list to wait for the interval", clk.HasWaiters)
		clk.Step(interval / 2)
		if got := fc.CallCount("ListInstances"); got != call-1 || !clk.HasWaiters() {
			t.Fatalf("half an interval after list %d: %d lists, want %d and a pending one", call-1, got, call-1)
		}
		clk.Step(interval / 2)
		waitFor(t, "the next list after one interval", func() bool { return fc.CallCount("ListInstances") == call })
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// While the cloud does not push back, a list starts as soon as the one
// before has answered: no interval; once it does, the interval holds.
func TestBatcherSkipsTheIntervalWithoutPushback(t *testing.T) {
	t.Parallel()
	const interval = time.Hour
	fc := cloudfake.New()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	var pushback atomic.Bool
	b := newPushbackBatcher(t, fc, interval, clk, pushback.Load)
	ctx := context.Background()
	for range 3 {
		clk.Step(time.Millisecond) // each caller's Node was seen after the last answer started
		if _, err := b.Get(ctx, clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if got := fc.CallCount("ListInstances"); got != 3 {
		t.Fatalf("lists = %d, want 3, none held for the interval", got)
	}
	pushback.Store(true)
	clk.Step(time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := b.Get(ctx, clk.Now())
		done <- err
	}()
	waitFor(t, "the list to wait for the interval", clk.HasWaiters)
	if got := fc.CallCount("ListInstances"); got != 3 {
		t.Fatalf("lists = %d while the cloud pushes back, want the 4th held", got)
	}
	clk.Step(interval)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := fc.CallCount("ListInstances"); got != 4 {
		t.Fatalf("lists = %d after the interval, want 4", got)
	}
}

func TestBatcherSharesErrors(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New()
	boom := errors.New("boom")
	fc.SetError("", boom)
	b := newTestBatcher(t, fc, time.Millisecond, clock.RealClock{})
	if _, err := b.Get(context.Background(), time.Now()); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	fc.SetError("", nil)
	if _, err := b.Get(context.Background(), time.Now()); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}

func TestBatcherCallerCancellation(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New()
	hold(t, fc) // the list never answers while the caller waits
	b := newTestBatcher(t, fc, time.Millisecond, clock.RealClock{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Get(ctx, time.Now()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
}

func TestSnapshotLookup(t *testing.T) {
	t.Parallel()
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
	if _, _, err := s.Lookup(newNode("dup")); !errors.Is(err, cloud.ErrAmbiguousName) {
		t.Errorf("duplicate name: err = %v", err)
	}
}
