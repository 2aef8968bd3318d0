package kit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// SlowStart lets one sync of a controller go first when it starts (it
// starts when its replica wins the lease); the whole pool of workers is
// let in when that sync ends.
//
// Why: at a takeover every worker picks a Service at the same instant,
// and their first cloud calls queue together behind the provider's
// client-side pacing, so the first load balancer waits for the lookups of
// all the others; a controller with a single worker makes its lookup and
// its create back to back. Letting one sync go first gives the new leader
// that promptness, and the cloud one probe before the whole pool arrives,
// which is also kinder to a cloud that was the reason for the failover.
//
// It costs the pool one sync's duration at the start, and holds for the
// start only: the whole pool is open once window has passed since Begin,
// whatever happened, so a first sync stuck on a
// silent cloud holds the others back for no longer than that, and a
// burst of Services long after the start is never slowed.
type SlowStart struct {
	sem    *semaphore.Weighted
	window time.Duration
	now    func() time.Time

	mu sync.Mutex
	// held is the capacity not yet opened.
	held  int64
	max   int64
	begun time.Time
}

// DefaultSlowStartWindow is how long after its start a controller's
// workers are let in gradually.
const DefaultSlowStartWindow = time.Second

// NewSlowStart returns a gate for workers syncs at once, one open until a
// sync ends or window passes after Begin; now is the controller's clock.
func NewSlowStart(workers int, window time.Duration, now func() time.Time) *SlowStart {
	n := int64(max(1, workers))
	s := &SlowStart{sem: semaphore.NewWeighted(n), held: n - 1, max: n, window: window, now: now}
	// The unopened capacity is taken by the gate itself; a new semaphore
	// always has it.
	s.sem.TryAcquire(s.held)
	return s
}

// Begin marks the controller's start (its first reconcile of anything);
// later calls change nothing.
func (s *SlowStart) Begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.begun.IsZero() {
		s.begun = s.now()
	}
}

// Enter waits for room for one sync; the returned func ends it. It fails
// only when ctx ends first.
func (s *SlowStart) Enter(ctx context.Context) (func(), error) {
	s.Begin()
	if left := s.left(); left <= 0 {
		s.openAll()
	} else {
		waitCtx, cancel := context.WithTimeout(ctx, left)
		err := s.sem.Acquire(waitCtx, 1)
		cancel()
		if err == nil {
			return s.ender(), nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wait for the controller's slow start: %w", ctx.Err())
		}
		// The window has passed: the syncs ahead are slow, not done.
		s.openAll()
	}
	if err := s.sem.Acquire(ctx, 1); err != nil {
		return nil, fmt.Errorf("wait for the controller's slow start: %w", err)
	}
	return s.ender(), nil
}

func (s *SlowStart) ender() func() {
	var once sync.Once
	return func() { once.Do(s.done) }
}

// left is how much of the window remains; 0 once it has passed or the
// pool is open.
func (s *SlowStart) left() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == 0 {
		return 0
	}
	return max(0, s.window-s.now().Sub(s.begun))
}

// done ends one sync and opens the whole pool.
func (s *SlowStart) done() {
	s.openAll()
	s.sem.Release(1)
}

func (s *SlowStart) openAll() {
	s.mu.Lock()
	open := s.held
	s.held = 0
	s.mu.Unlock()
	if open > 0 {
		s.sem.Release(open)
	}
}

// Open is how many syncs may run at once now.
func (s *SlowStart) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.max - s.held)
}
