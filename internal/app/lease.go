package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// leaderElectionTolerance is how long past its lease a leader may go
// without renewing before /healthz fails, upstream's 20 seconds.
const leaderElectionTolerance = 20 * time.Second

// observedLock wraps the Lease lock that leader election uses and records
// when a request to the Lease last succeeded and when this replica last
// wrote it as holder. Every replica's elector touches the Lease each retry
// period (standbys read it, the leader renews it), so readiness can say
// "the lease client works" without a request of its own.
type observedLock struct {
	resourcelock.Interface
	clock clock.PassiveClock

	mu        sync.Mutex
	lastOK    time.Time
	lastWrite time.Time
	holding   bool
}

func newObservedLock(inner resourcelock.Interface, c clock.PassiveClock) *observedLock {
	return &observedLock{Interface: inner, clock: c}
}

// Get counts a missing Lease as a working client: the elector creates it next.
func (l *observedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil || apierrors.IsNotFound(err) {
		l.observe(false, false)
	}
	return rec, raw, err
}

func (l *observedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, ler)
	if err == nil {
		l.observe(true, ler.HolderIdentity == l.Identity())
	}
	return err
}

// Update is how the elector renews, takes over and releases the Lease.
func (l *observedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, ler)
	if err == nil {
		l.observe(true, ler.HolderIdentity == l.Identity())
	}
	return err
}

func (l *observedLock) observe(write, holding bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	l.lastOK = now
	if write {
		l.lastWrite = now
		l.holding = holding
	}
}

// readyCheck passes once a Lease request succeeded within the window.
func (l *observedLock) readyCheck(window time.Duration) healthz.HealthChecker {
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

// liveCheck fails, as upstream's leader-election health check does, when
// this replica holds the lease but has not renewed it for the lease
// duration plus the tolerance: a leader stuck without noticing. A standby
// always passes.
func (l *observedLock) liveCheck(leaseDuration time.Duration) healthz.HealthChecker {
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

// newLeaseLock builds the Lease lock controller-runtime would build (same
// identity scheme, client timeout, and leader-election events through the
// core API, as upstream records them) and wraps it to observe it. stop
// shuts the event broadcaster down.
func newLeaseLock(o *Options, restCfg *rest.Config) (lock *observedLock, stop func(), err error) {
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
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: UserAgent})
	inner, err := resourcelock.New(resourcelock.LeasesResourceLock, o.LeaderElectNamespace, o.LeaderElectName,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		broadcaster.Shutdown()
		return nil, nil, fmt.Errorf("--leader-elect-resource-lock=%s: %w", o.ResourceLock, err)
	}
	return newObservedLock(inner, clock.RealClock{}), broadcaster.Shutdown, nil
}
