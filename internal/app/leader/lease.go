package leader

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/standby"
)

// leaderElectionTolerance is how long past its lease a leader may go
// without renewing before /healthz fails, upstream's 20 seconds.
const leaderElectionTolerance = 20 * time.Second

// Lock wraps the Lease lock that leader election uses and records
// when a request to the Lease last succeeded and when this replica last
// wrote it as holder. Every replica's elector touches the Lease each retry
// period (standbys read it, the leader renews it), so readiness can say
// "the lease client works" without a request of its own.
type Lock struct {
	resourcelock.Interface
	clock clock.PassiveClock

	mu        sync.Mutex
	lastOK    time.Time
	lastWrite time.Time
	holding   bool
	// renewSent is when the request of the last write that kept this
	// replica the holder was sent, on this process's monotonic clock: the
	// fence (cloudwrap.Fence) proves leadership from it. Taken before the
	// request, since the API server may apply it any time after that.
	renewSent time.Time

	// A standby's view of the Lease, to attempt the takeover the moment
	// the holder's lease expires rather than on the elector's next retry,
	// which comes up to RetryPeriod × (1 + JitterFactor) later.
	seenRaw      []byte
	seenAt       time.Time
	seenHolder   string
	seenDuration time.Duration
	// maxGap bounds how long the elector can go between two reads; zero
	// turns the early attempt off. sleep waits, or fails when ctx ends.
	// leaseDuration is what this replica writes when it takes the Lease.
	maxGap        time.Duration
	sleep         func(ctx context.Context, d time.Duration) error
	leaseDuration time.Duration
	// watch, when set, keeps the view current between reads until ctx
	// ends (lease_watch.go).
	watch func(ctx context.Context)
	// changes is signalled (without blocking) when the view or this
	// replica's holding changes: the standby's cache warmer wakes on it.
	changes chan struct{}
}

// expiryMargin puts the attempt just past the expiry.
const expiryMargin = 25 * time.Millisecond

func newObservedLock(inner resourcelock.Interface, c clock.PassiveClock) *Lock {
	return &Lock{Interface: inner, clock: c, changes: make(chan struct{}, 1)}
}

// Get counts a missing Lease as a working client: the elector creates it
// next.
//
// On a standby, when the holder's lease (as this replica last saw it
// renewed) expires before the elector's next attempt could come, Get waits
// for the expiry and, if the Lease is still the one seen then, takes it as
// client-go's elector would on its next attempt: same rule (no renewal seen
// for the lease duration, on this replica's clock), same record, same
// optimistic concurrency (an update conditional on the version just read).
// It returns the Lease as written, so the elector finds itself the holder
// and renews at once. Without this the takeover comes at the elector's
// first attempt after the expiry, up to RetryPeriod × (1 + JitterFactor)
// late, and the elector cannot be asked to attempt earlier: it decides
// from a time it takes before reading.
func (l *Lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if d := l.untilExpiry(); d > 0 {
		if err := l.sleep(ctx, d); err != nil {
			return nil, nil, fmt.Errorf("waiting %s for the lease %s to expire: %w", d, l.Describe(), err)
		}
		if rec, raw, ok := l.takeExpired(ctx); ok {
			return rec, raw, nil
		}
	}
	return l.get(ctx)
}

func (l *Lock) get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil || apierrors.IsNotFound(err) {
		l.observe(false, false, time.Time{})
	}
	if err == nil && rec != nil {
		l.see(rec, raw)
	}
	return rec, raw, err
}

// takeExpired reads the Lease and, when nobody renewed it since it was
// seen, writes this replica as holder. ok is false when it was renewed,
// taken by someone else, or either request failed: the elector's own
// attempt then reads it again and decides.
func (l *Lock) takeExpired(ctx context.Context) (_ *resourcelock.LeaderElectionRecord, _ []byte, ok bool) {
	rec, raw, err := l.get(ctx)
	if err != nil || rec == nil || !l.expired(raw) {
		return nil, nil, false
	}
	now := metav1.NewTime(l.clock.Now())
	taken := resourcelock.LeaderElectionRecord{
		HolderIdentity:       l.Identity(),
		LeaseDurationSeconds: int(l.leaseDuration / time.Second),
		AcquireTime:          now,
		RenewTime:            now,
		LeaderTransitions:    rec.LeaderTransitions + 1,
	}
	if err := l.Update(ctx, taken); err != nil {
		klog.FromContext(ctx).V(2).Info("Taking the expired lease failed; the elector tries again", "lock", l.Describe(), "err", err)
		return nil, nil, false
	}
	klog.FromContext(ctx).Info("Took the lease at its expiry", "lock", l.Describe(), "previousHolder", rec.HolderIdentity,
		"lastRenewalSeen", l.seenTime())
	out, err := json.Marshal(taken)
	if err != nil {
		return nil, nil, false
	}
	return &taken, out, true
}

func (l *Lock) seenTime() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seenAt
}

// expired tells whether raw is the version seen a lease duration ago.
func (l *Lock) expired(raw []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Equal(raw, l.seenRaw) && l.seenHolder != "" && l.seenHolder != l.Identity() &&
		!l.clock.Now().Before(l.seenAt.Add(l.seenDuration))
}

// see records the Lease as read, and when this version was first seen.
func (l *Lock) see(rec *resourcelock.LeaderElectionRecord, raw []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if bytes.Equal(raw, l.seenRaw) {
		return
	}
	l.seenRaw, l.seenAt = raw, l.clock.Now()
	l.seenHolder, l.seenDuration = rec.HolderIdentity, time.Duration(rec.LeaseDurationSeconds)*time.Second
	l.changed()
}

// changed wakes whoever waits on changes; one pending wake-up is enough.
func (l *Lock) changed() {
	select {
	case l.changes <- struct{}{}:
	default:
	}
}

// view is the Lease as last seen, for the standby's cache warmer.
func (l *Lock) view() standby.LeaseView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return standby.LeaseView{Holder: l.seenHolder, Seen: l.seenAt, Leading: l.holding}
}

// Holding tells whether this replica holds the Lease.
func (l *Lock) Holding() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holding
}

// untilExpiry is how long to wait before reading the Lease: until just
// past its expiry when that falls before the elector's next attempt, and
// not at all otherwise (a leader, a free or unseen Lease, or one renewed
// recently enough that a later attempt will look again in time).
func (l *Lock) untilExpiry() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxGap <= 0 || l.holding || l.seenAt.IsZero() || l.seenHolder == "" || l.seenHolder == l.Identity() {
		return 0
	}
	d := l.seenAt.Add(l.seenDuration + expiryMargin).Sub(l.clock.Now())
	if d <= 0 || d > l.maxGap {
		return 0
	}
	return d
}

// Create is how the elector takes a Lease that does not exist yet.
func (l *Lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.clock.Now()
	err := l.Interface.Create(ctx, ler)
	if err == nil {
		l.wrote(sent, ler.HolderIdentity == l.Identity())
	}
	return err
}

// Update is how the elector renews, takes over and releases the Lease.
//
// A release (no holder) of a Lease last read as another replica's is not
// written: client-go's elector releases when its context ends whether or
// not it has noticed the takeover yet (it asks only its own last
// observation), and the write, conditional on the version it just read,
// would free the new leader's Lease. That happens when this replica gives
// up leadership because its fence closed, before its elector looked again.
func (l *Lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if ler.HolderIdentity == "" {
		if holder := l.seenOther(); holder != "" {
			klog.FromContext(ctx).Info("Not releasing the lease: another replica holds it", "lock", l.Describe(), "holder", holder)
			l.wrote(time.Time{}, false)
			return nil
		}
	}
	sent := l.clock.Now()
	err := l.Interface.Update(ctx, ler)
	if err == nil {
		l.wrote(sent, ler.HolderIdentity == l.Identity())
	}
	return err
}

// seenOther is the holder of the Lease as last read when it is another
// replica, else "".
func (l *Lock) seenOther() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seenHolder == l.Identity() {
		return ""
	}
	return l.seenHolder
}

// wrote records a successful write of the Lease whose request was sent at
// sent, naming this replica as holder or not.
func (l *Lock) wrote(sent time.Time, holding bool) {
	if !holding {
		sent = time.Time{}
	}
	l.observe(true, holding, sent)
}

// LastRenewal implements cloudwrap.Renewals: when the request of the last
// write that kept this replica the holder was sent, and whether it holds
// the Lease.
func (l *Lock) LastRenewal() (sent time.Time, holding bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewSent, l.holding
}

// observe records a successful request to the Lease; for a write, whether
// it named this replica as holder and when its request was sent (zero
// when not holding), together, so that the fence never reads one without
// the other.
func (l *Lock) observe(write, holding bool, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	l.lastOK = now
	if write {
		l.lastWrite = now
		if l.holding != holding {
			defer l.changed()
		}
		l.holding, l.renewSent = holding, sent
	}
}

// ReadyCheck passes once a Lease request succeeded within the window.
func (l *Lock) ReadyCheck(window time.Duration) healthz.HealthChecker {
	return healthz.NamedCheck("leader-election", func(*http.Request) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.lastOK.IsZero() {
			return fmt.Errorf("no request to the lease %s has succeeded yet", l.Describe())
		}
		if age := l.clock.Since(l.lastOK); age > window {
			return fmt.Errorf("no request to the lease %s has succeeded for %s", l.Describe(), age.Round(time.Second))
		}
		return nil
	})
}

// LiveCheck fails, as upstream's leader-election health check does, when
// this replica holds the lease but has not renewed it for the lease
// duration plus the tolerance: a leader stuck without noticing. A standby
// always passes.
func (l *Lock) LiveCheck(leaseDuration time.Duration) healthz.HealthChecker {
	return healthz.NamedCheck("leader-election", func(*http.Request) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.holding {
			return nil
		}
		if age := l.clock.Since(l.lastWrite); age > leaseDuration+leaderElectionTolerance {
			return fmt.Errorf("holding the lease %s but last renewed %s ago", l.Describe(), age.Round(time.Second))
		}
		return nil
	})
}

// NewLeaseLock builds the Lease lock controller-runtime would build (same
// identity scheme, client timeout, and leader-election events through the
// core API, as upstream records them) and wraps it to observe it. stop
// shuts the event broadcaster down.
func NewLeaseLock(o *options.Options, restCfg *rest.Config) (lock *Lock, stop func(), err error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, nil, fmt.Errorf("leader election identity: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	cfg := rest.AddUserAgent(rest.CopyConfig(restCfg), "leader-election")
	// One slow request must not cost the lease: stay under the deadline.
	cfg.Timeout = max(o.RenewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("leader election client: %w", err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: options.UserAgent})
	inner, err := resourcelock.New(resourcelock.LeasesResourceLock, o.LeaderElectNamespace, o.LeaderElectName,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		broadcaster.Shutdown()
		return nil, nil, fmt.Errorf("--leader-elect-resource-lock=%s: %w", o.ResourceLock, err)
	}
	l := newObservedLock(inner, clock.RealClock{})
	// Attempts start up to RetryPeriod × (1 + JitterFactor) after the
	// previous one ended; the rest covers the read itself, so that some
	// read always falls within the gap before the expiry.
	l.maxGap = time.Duration(float64(o.RetryPeriod)*(1+leaderelection.JitterFactor)) + o.RetryPeriod
	if l.maxGap >= o.LeaseDuration {
		// Never wait a whole lease: the elector would see the expiry itself.
		l.maxGap = o.LeaseDuration / 2
	}
	l.sleep = WaitContext
	l.leaseDuration = o.LeaseDuration
	// The watch streams for minutes: not under the request timeout above.
	wcfg := rest.CopyConfig(cfg)
	wcfg.Timeout = 0
	wcs, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		broadcaster.Shutdown()
		return nil, nil, fmt.Errorf("leader election watch client: %w", err)
	}
	leases := wcs.CoordinationV1().Leases(o.LeaderElectNamespace)
	l.watch = func(ctx context.Context) { l.watchLease(ctx, leases, o.LeaderElectName, o.RetryPeriod) }
	return l, broadcaster.Shutdown, nil
}

// Leadership is this replica's identity, whether it holds the Lease, and
// who does as last seen.
func (l *Lock) Leadership() (replica string, leading bool, leader string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	replica = l.Identity()
	if l.holding {
		return replica, true, replica
	}
	return replica, false, l.seenHolder
}

// Watch keeps the lock's view of the Lease current between reads until ctx
// ends (lease_watch.go).
func (l *Lock) Watch(ctx context.Context) {
	if l.watch != nil {
		l.watch(ctx)
	}
}
