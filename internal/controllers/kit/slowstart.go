package kit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// SlowStart lets a controller's workers in gradually once it starts (it
// starts when its replica wins the lease): one sync at first, and each
// completed sync doubles how many may run at once, up to the workers.
//
// Why: at a takeover every worker picks a Service at the same instant,
// and their first cloud calls queue together behind the provider's
// client-side pacing, so the first load balancer waits for the lookups of
// all the others; a controller with a single worker makes its lookup and
// its create back to back. Letting one sync go first gives the new leader
// that promptness, and the cloud one probe before the whole pool arrives,
// which is also kinder to a cloud that was the reason for the failover.
// The pool is fully open after a handful of syncs, so a burst is not
// slowed beyond the first few sync durations; and fully open after
// patience whatever happened, so a first sync stuck on a cloud that does
// not answer holds the others back for no longer than that.
type SlowStart struct {
	sem      *semaphore.Weighted
	patience time.Duration

	mu sync.Mutex
	// held is the capacity not yet opened.
	held int64
	max  int64
}

// DefaultSlowStartPatience is how long a waiting sync waits for the slow
// start before it opens the whole pool.
const DefaultSlowStartPatience = time.Second

// NewSlowStart returns a gate for workers syncs at once, one open.
func NewSlowStart(workers int, patience time.Duration) *SlowStart {
	n := int64(max(1, workers))
	s := &SlowStart{sem: semaphore.NewWeighted(n), held: n - 1, max: n, patience: patience}
	// The unopened capacity is taken by the gate itself; it cannot block.
	_ = s.sem.Acquire(context.Background(), s.held)
	return s
}

// Enter waits for room for one sync; the returned func ends it. It fails
// only when ctx ends first.
func (s *SlowStart) Enter(ctx context.Context) (func(), error) {
	waitCtx, cancel := context.WithTimeout(ctx, s.patience)
	err := s.sem.Acquire(waitCtx, 1)
	cancel()
	if err != nil && ctx.Err() == nil {
		// Out of patience: the syncs ahead are slow, not done; open up.
		s.openAll()
		err = s.sem.Acquire(ctx, 1)
	}
	if err != nil {
		return nil, fmt.Errorf("wait for the controller's slow start: %w", err)
	}
	var once sync.Once
	return func() { once.Do(s.done) }, nil
}

// done ends one sync and doubles the open capacity.
func (s *SlowStart) done() {
	s.mu.Lock()
	open := min(s.held, s.max-s.held)
	s.held -= open
	s.mu.Unlock()
	s.sem.Release(1 + open)
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
