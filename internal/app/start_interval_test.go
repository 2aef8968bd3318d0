package app

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/cloud-provider/fake"

	"github.com/stratus-ccm/stratus/internal/cloudwrap"
)

// --controller-start-interval, as upstream: after each controller that
// started, the leader waits a jittered [interval, 2*interval); a skipped
// controller costs no wait, and shutting down during a wait stops the
// remaining starts without an error.
func TestControllerStartInterval(t *testing.T) {
	c, err := cloudwrap.Instrument(&fake.Cloud{}, cloudwrap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var started []string
	starter := func(name string, ok bool) StartFunc {
		return func(context.Context, ControllerContext) (bool, string, error) {
			started = append(started, name)
			return ok, "skipped by the test", nil
		}
	}
	var waits []time.Duration
	r := &controllersRunnable{
		cc:       ControllerContext{Cloud: c},
		enabled:  []string{"a", "b", "c"},
		starters: map[string]StartFunc{"a": starter("a", true), "b": starter("b", false), "c": starter("c", true)},
		restCfg:  nil,
		// Nobody asks it for an informer, so it starts none.
		informers: informers.NewSharedInformerFactory(kubefake.NewClientset(), 0),
		// The test's wait returns at once; what matters is what was asked.
		startInterval: 2 * time.Second,
		wait: func(_ context.Context, d time.Duration) error {
			waits = append(waits, d)
			return nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Start returns once every controller started
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if len(started) != 3 || len(waits) != 2 {
		t.Fatalf("started %v, waits %v; want 3 starts and a wait after each of the 2 that started", started, waits)
	}
	for _, d := range waits {
		if d < 2*time.Second || d >= 4*time.Second {
			t.Errorf("wait %v outside upstream's jitter [2s, 4s)", d)
		}
	}

	started, waits = nil, nil
	r.wait = func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return context.Canceled
	}
	if err := r.Start(ctx); err != nil {
		t.Fatalf("shutdown during the start interval: %v", err)
	}
	if len(started) != 1 {
		t.Errorf("started %v after a shutdown during the first wait; want only a", started)
	}

	started, waits = nil, nil
	r.startInterval = 0
	if err := r.Start(ctx); err != nil || len(waits) != 0 || len(started) != 3 {
		t.Errorf("interval 0: err %v, waits %v, started %v; want no waits", err, waits, started)
	}
}
