package leader

import (
	"context"
	"encoding/json"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// leaseWatchTimeout makes the API server end each watch after a while, as
// informers do, so a watch never outlives a silent network failure long.
const leaseWatchTimeout = 5 * time.Minute

// watchLease keeps the standby's view of the Lease current between the
// elector's reads: a renewal is seen when it is written, not at the next
// read up to RetryPeriod × (1 + JitterFactor) later, so the lease duration
// is counted from the renewal itself and a dead leader's lease is taken
// that much sooner. Seeing a renewal sooner never shortens the wait below
// the lease duration after it. Without the watch permission (RBAC written
// for upstream grants only get and update) the reads alone keep the view,
// as before. It returns when ctx ends.
func (l *Lock) watchLease(ctx context.Context, leases coordinationclient.LeaseInterface, name string, retry time.Duration) {
	log := klog.FromContext(ctx).WithValues("lease", l.Describe())
	for ctx.Err() == nil {
		w, err := leases.Watch(ctx, metav1.ListOptions{
			FieldSelector:  fields.OneTermEqualSelector("metadata.name", name).String(),
			TimeoutSeconds: ptr.To(int64(leaseWatchTimeout / time.Second)),
		})
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			log.Info("Not allowed to watch the Lease; a standby sees renewals when it reads the Lease", "err", err)
			return
		case err != nil:
			log.V(2).Info("Watching the Lease failed; retrying", "err", err, "after", retry)
			if WaitContext(ctx, retry) != nil {
				return
			}
			continue
		}
		l.follow(ctx, w)
	}
}

// follow records the Leases w delivers until it ends or ctx does.
func (l *Lock) follow(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if lease, isLease := ev.Object.(*coordinationv1.Lease); isLease && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				l.seeLease(lease)
			}
		}
	}
}

// seeLease records a Lease as the lock's Get would return it.
func (l *Lock) seeLease(lease *coordinationv1.Lease) {
	rec := resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec)
	raw, err := json.Marshal(*rec)
	if err != nil {
		return
	}
	l.see(rec, raw)
}

// WaitContext waits d or until ctx ends, whichever is first.
func WaitContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
