package standby

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fakeInformers records which informers run; the Warmer's own logic is
// under test here, the real cache in the daemon's tests.
type fakeInformers struct {
	mu      sync.Mutex
	running []string
	syncs   int
}

func (f *fakeInformers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if k := kindName(obj); !slices.Contains(f.running, k) {
		f.running = append(f.running, k)
	}
	return nil, nil
}

func (f *fakeInformers) RemoveInformer(_ context.Context, obj client.Object) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running = slices.DeleteFunc(f.running, func(k string) bool { return k == kindName(obj) })
	return nil
}

func (f *fakeInformers) WaitForCacheSync(context.Context) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncs++
	return true
}

func (f *fakeInformers) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.running)
}

type rig struct {
	t      *testing.T
	w      *Warmer
	f      *fakeInformers
	clock  *clocktesting.FakeClock
	view   LeaseView
	synced bool
	s      state
}

const (
	suspect = 6 * time.Second
	cool    = 15 * time.Second
)

func newRig(t *testing.T) *rig {
	r := &rig{t: t, f: &fakeInformers{}, clock: clocktesting.NewFakeClock(time.Unix(1000, 0))}
	r.w = &Warmer{Cache: r.f, Kinds: []client.Object{&corev1.Node{}, &corev1.Service{}},
		View: func() LeaseView { return r.view }, Suspect: suspect, Cool: cool, Poll: 250 * time.Millisecond, Clock: r.clock,
		Synced: func(b bool) { r.synced = b }}
	return r
}

// at advances the clock by d and lets the Warmer look.
func (r *rig) at(d time.Duration) {
	r.t.Helper()
	r.clock.Step(d)
	_, ctx := ktesting.NewTestContext(r.t)
	if err := r.w.step(ctx, &r.s, r.clock.Now()); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) renewed() { r.view.Seen = r.clock.Now() }

func (r *rig) wantKinds(when string, want ...string) {
	r.t.Helper()
	if got := r.f.kinds(); !slices.Equal(got, want) {
		r.t.Fatalf("%s: informers running %v, want %v", when, got, want)
	}
	if r.synced != (len(want) > 0) {
		r.t.Fatalf("%s: synced = %v with informers %v", when, r.synced, want)
	}
}

// While the holder renews every 2 s, a standby runs no informer; once it
// has not renewed for Suspect, well before its 15-s lease expires, the
// standby has every cache synced; after the holder renews again for Cool,
// the caches are released.
func TestStandbyFillsCachesOnlyWhenTheHolderStopsRenewing(t *testing.T) {
	r := newRig(t)
	r.view = LeaseView{Holder: "a"}
	r.at(0)
	r.wantKinds("before the first read of the Lease")
	r.renewed()
	for range 10 {
		r.at(2 * time.Second)
		r.renewed()
		r.wantKinds("while the holder renews every 2 s")
	}
	// A renewal 5.75 s late is still no reason.
	r.at(suspect - 250*time.Millisecond)
	r.wantKinds("a renewal late by less than Suspect")
	r.at(250 * time.Millisecond)
	r.wantKinds("no renewal for Suspect", "Node", "Service")
	// The holder is back: the caches stay for Cool, then go.
	for elapsed := time.Duration(0); elapsed < cool-2*time.Second; elapsed += 2 * time.Second {
		r.renewed()
		r.at(2 * time.Second)
		r.wantKinds("within Cool of the last reason", "Node", "Service")
	}
	r.renewed()
	r.at(2 * time.Second)
	r.wantKinds("Cool after the holder renews again")
}

// A free Lease (released, or never taken) fills the caches at once: the
// elector may take it at its next attempt.
func TestStandbyFillsCachesWhenTheLeaseIsFree(t *testing.T) {
	r := newRig(t)
	r.view = LeaseView{Holder: "", Seen: r.clock.Now()}
	r.at(0)
	r.wantKinds("free lease", "Node", "Service")
}

// Leading keeps the caches whatever the view, and never empties them.
func TestLeaderKeepsItsCaches(t *testing.T) {
	r := newRig(t)
	r.view = LeaseView{Holder: "me", Seen: r.clock.Now(), Leading: true}
	r.at(0)
	r.wantKinds("leading", "Node", "Service")
	for range 20 {
		r.renewed()
		r.at(2 * time.Second)
	}
	r.wantKinds("leading for 40 s", "Node", "Service")
}

// Without leader election, Start fills the caches once and returns.
func TestWithoutElectionCachesFillAtOnce(t *testing.T) {
	r := newRig(t)
	r.w.View = nil
	_, ctx := ktesting.NewTestContext(t)
	if err := r.w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r.wantKinds("no leader election", "Node", "Service")
}
