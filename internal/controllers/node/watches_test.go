package node

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
)

// TestWatchesMatchSetup pins Watches, which the daemon's controller table
// reads, to what SetupWithManager really watches.
func TestWatchesMatchSetup(t *testing.T) {
	t.Parallel()
	kittest.RequireWatches(t, Watches(), func(_ context.Context, mgr manager.Manager) error {
		c, err := New(Deps{Client: mgr.GetClient(), Instances: newFakeCloud(), Recorder: events.NewFakeRecorder(10)}, Config{Workers: 1, RefreshPeriod: time.Hour})
		if err != nil {
			return err
		}
		return c.SetupWithManager(mgr)
	})
}
