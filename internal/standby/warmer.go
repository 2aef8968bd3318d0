package standby

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LeaseView is what this replica last saw of the leader Lease.
type LeaseView struct {
	// Holder is the Lease's holder, "" when it is free or does not exist.
	Holder string
	// Seen is when this replica first saw the Lease's current version: a
	// renewal is a new version. Zero until the Lease was read once.
	Seen time.Time
	// Leading is true while this replica holds the Lease.
	Leading bool
}

// Informers is the part of controller-runtime's cache the Warmer uses.
type Informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
	RemoveInformer(ctx context.Context, obj client.Object) error
	WaitForCacheSync(ctx context.Context) bool
}

// Warmer is a manager runnable on every replica, leader or not. It fills
// the caches of Kinds when they are wanted: always without leader election
// (View nil), on a standby once the holder is suspect. It empties them
// once they have not been wanted for Cool.
type Warmer struct {
	Cache Informers
	Kinds []client.Object
	// View returns the Lease as last seen; nil means no leader election.
	View func() LeaseView
	// Suspect is how long the holder may go without a renewal seen before
	// the standby fills its caches. A healthy holder renews every retry
	// period; Suspect must be longer than the longest gap between two
	// renewals this replica sees, and short enough before the lease
	// duration to leave the time a full list takes.
	Suspect time.Duration
	// Cool is how long the caches stay once no longer wanted, so that a
	// holder that renews late now and then does not make the standby list
	// everything each time.
	Cool time.Duration
	// Poll is how often the view is looked at; Changed, when set, wakes
	// the Warmer at once when the view changes, so that a released Lease
	// starts the lists before the elector's next attempt takes it.
	Poll    time.Duration
	Changed <-chan struct{}
	Clock   clock.WithTicker
	// Synced is told whether the caches are synced: true once filled,
	// false once emptied (for /readyz and the synced metric).
	Synced func(bool)
}

// Start runs until ctx ends.
func (w *Warmer) Start(ctx context.Context) error {
	var s state
	t := w.Clock.NewTicker(w.Poll)
	defer t.Stop()
	for {
		if err := w.step(ctx, &s, w.Clock.Now()); err != nil {
			return err
		}
		if w.View == nil {
			// Without leader election the caches are always wanted.
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-w.Changed:
		}
	}
}

// state is what the Warmer remembers between two looks at the Lease.
type state struct {
	warm       bool
	lastWanted time.Time
}

// step fills or empties the caches as the Lease seen at now asks.
func (w *Warmer) step(ctx context.Context, s *state, now time.Time) error {
	want, why := w.wanted(now)
	switch {
	case want && !s.warm:
		if err := w.fill(ctx, why); err != nil {
			return err
		}
		s.warm = ctx.Err() == nil
	case !want && s.warm && now.Sub(s.lastWanted) >= w.Cool:
		w.empty(ctx)
		s.warm = false
	}
	if want {
		s.lastWanted = now
	}
	return nil
}

// NeedLeaderElection is false: the Warmer runs on standbys.
func (w *Warmer) NeedLeaderElection() bool { return false }

// wanted tells whether the caches should be full now, and why.
func (w *Warmer) wanted(now time.Time) (bool, string) {
	if w.View == nil {
		return true, "no leader election"
	}
	v := w.View()
	switch {
	case v.Leading:
		return true, "leading"
	case v.Seen.IsZero():
		// Not read yet: the first read comes within a retry period.
		return false, ""
	case v.Holder == "":
		return true, "the lease is free"
	case now.Sub(v.Seen) >= w.Suspect:
		return true, fmt.Sprintf("no renewal by %s seen for %s", v.Holder, now.Sub(v.Seen).Round(time.Millisecond))
	}
	return false, ""
}

// fill starts every informer and waits until all have synced; it returns
// early, without error, when ctx ends.
func (w *Warmer) fill(ctx context.Context, why string) error {
	log := klog.FromContext(ctx)
	start := w.Clock.Now()
	for _, obj := range w.Kinds {
		// Not blocking: the informers list in parallel, and
		// WaitForCacheSync below waits for all of them.
		if _, err := w.Cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("start the %s informer: %w", kindName(obj), err)
		}
	}
	if !w.Cache.WaitForCacheSync(ctx) {
		return nil
	}
	w.Synced(true)
	log.Info("Informer caches synced", "kinds", w.kindNames(), "reason", why, "elapsed", w.Clock.Since(start))
	return nil
}

// empty stops the informers; their caches are released. A failure leaves
// that informer running, which costs memory and nothing else.
func (w *Warmer) empty(ctx context.Context) {
	log := klog.FromContext(ctx)
	w.Synced(false)
	for _, obj := range w.Kinds {
		if err := w.Cache.RemoveInformer(ctx, obj); err != nil {
			log.Error(err, "Could not stop an informer on the standby; its cache stays", "kind", kindName(obj))
		}
	}
	// Hand the caches' memory back now rather than as the scavenger gets
	// to it: releasing it is the point of emptying them, and this happens
	// once per episode of late renewals.
	debug.FreeOSMemory()
	log.Info("The leader renews again: informer caches released until the next sign it is gone", "kinds", w.kindNames())
}

func (w *Warmer) kindNames() []string {
	out := make([]string, 0, len(w.Kinds))
	for _, obj := range w.Kinds {
		out = append(out, kindName(obj))
	}
	return out
}

func kindName(obj client.Object) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
}
