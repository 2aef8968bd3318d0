package kit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
)

// One sync runs alone at first; when it ends, the whole pool is open.
func TestSlowStartLetsOneSyncFirst(t *testing.T) {
	t.Parallel()
	s := kit.NewSlowStart(10, time.Hour, time.Now)
	ctx := context.Background()
	first, err := s.Enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	blocked, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.Enter(blocked); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second sync entered beside the first: %v", err)
	}
	first()
	first() // ending twice frees nothing more
	if got := s.Open(); got != 10 {
		t.Fatalf("open after the first sync = %d, want the 10 workers", got)
	}
	for range 10 {
		if _, err := s.Enter(ctx); err != nil {
			t.Fatal(err)
		}
	}
	full, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	if _, err := s.Enter(full); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an eleventh sync entered beside ten: %v", err)
	}
}

func TestSlowStartOfOneWorker(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{0, 1} {
		s := kit.NewSlowStart(workers, time.Hour, time.Now)
		end, err := s.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		end()
		if got := s.Open(); got != 1 {
			t.Fatalf("workers %d: open = %d, want 1", workers, got)
		}
	}
}

// A first sync that does not end (a cloud that does not answer) holds the
// others back until the window has passed only.
func TestSlowStartOpensAfterTheWindow(t *testing.T) {
	t.Parallel()
	s := kit.NewSlowStart(4, 30*time.Millisecond, time.Now)
	ctx := context.Background()
	if _, err := s.Enter(ctx); err != nil { // never ends
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Enter(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Open(); got != 4 {
		t.Fatalf("open = %d, want 4", got)
	}
	// A canceled wait is an error, not an opening.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Enter(canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Enter with a canceled context: %v", err)
	}
}

// The window counts from the controller's start (Begin), not from the
// first sync: Services that come long after the start find the pool open.
func TestSlowStartHoldsForTheStartOnly(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	s := kit.NewSlowStart(10, time.Second, clk.Now)
	s.Begin()
	clk.Step(time.Minute)
	s.Begin() // later calls change nothing
	ctx := context.Background()
	for range 10 {
		if _, err := s.Enter(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Open(); got != 10 {
		t.Fatalf("open a minute after the start = %d, want 10", got)
	}
}
