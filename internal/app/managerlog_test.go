package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestManagerLoggerLeaseReleaseOnShutdownIsInfo(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	log := managerLogger(base).WithName("manager").WithValues("k", "v")

	// What controller-runtime's stop sequence logs once a clean shutdown
	// has released the lease.
	log.Error(errors.New(crLeaderLost), crStopSequenceError)
	// Any other error during the stop sequence, or the same words
	// elsewhere, stays an error.
	log.Error(errors.New("runnable failed"), crStopSequenceError)
	log.Error(errors.New(crLeaderLost), "Problem running manager")

	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3: %q", len(lines), lines)
	}
	if strings.Contains(lines[0], `"error"`) || !strings.Contains(lines[0], "Released the leader lease on shutdown") ||
		!strings.Contains(lines[0], `"k"="v"`) || !strings.HasPrefix(lines[0], "manager ") {
		t.Errorf("lease release on shutdown logged as %q; want an info line with the logger's name and values", lines[0])
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, `"error"=`) {
			t.Errorf("a real error lost its error level: %q", l)
		}
	}
}
