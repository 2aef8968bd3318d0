package scenario

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
)

func TestPeakDuringKeepsTheHighestSample(t *testing.T) {
	// The start and end samples are always taken, so the spike in the
	// second read is seen however many ticks fall in the window.
	vals := []float64{10, 50, 20}
	i := 0
	read := func() (float64, error) {
		v := vals[min(i, len(vals)-1)]
		i++
		return v, nil
	}
	got, err := peakDuring(context.Background(), 20*time.Millisecond, time.Millisecond, read)
	if err != nil {
		t.Fatal(err)
	}
	if got != 50 {
		t.Fatalf("peak = %v, want 50", got)
	}
	if i < 2 {
		t.Fatalf("read %d times, want at least the start and the end", i)
	}
}

func TestPeakDuringReportsReadErrors(t *testing.T) {
	boom := errors.New("gone")
	n := 0
	_, err := peakDuring(context.Background(), time.Hour, time.Millisecond, func() (float64, error) {
		n++
		if n == 3 {
			return 0, boom
		}
		return 1, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

func TestPeakDuringStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := peakDuring(ctx, time.Hour, time.Hour, func() (float64, error) { return 1, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestPeakDuringOnAProcessStaysUnderItsHighWaterMark(t *testing.T) {
	pid := os.Getpid()
	got, err := peakDuring(context.Background(), 10*time.Millisecond, time.Millisecond, func() (float64, error) { return harness.RSSMiB(pid) })
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := harness.PeakRSSMiB(pid)
	if err != nil {
		t.Fatal(err)
	}
	if got <= 0 || got > hwm {
		t.Fatalf("sampled peak %v MiB, want within (0, VmHWM %v]", got, hwm)
	}
}
