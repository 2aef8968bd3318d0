package kit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
)

// One sync runs alone at first; each one that ends doubles the room, up
// to the workers, and the room never shrinks.
func TestSlowStartOpensByDoubling(t *testing.T) {
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
	first() // ending twice opens nothing more
	if got := s.Open(); got != 2 {
		t.Fatalf("open after one sync = %d, want 2", got)
	}
	var ends []func()
	for range 2 {
		end, err := s.Enter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
	}
	for i, want := range []int{4, 8} {
		ends[i]()
		if got := s.Open(); got != want {
			t.Fatalf("open after %d more syncs = %d, want %d", i+1, got, want)
		}
	}
	end, err := s.Enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	end()
	if got := s.Open(); got != 10 {
		t.Fatalf("open = %d, want the 10 workers", got)
	}
	// Fully open: ten syncs at once.
	for range 10 {
		if _, err := s.Enter(ctx); err != nil {
			t.Fatal(err)
		}
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
