package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

// ReasonLeaseHeldWithoutElection is the Warning event on the leader
// election Lease when a controller manager starts with --leader-elect=false
// while another holds that Lease.
const ReasonLeaseHeldWithoutElection = "LeaseHeldWhileElectionDisabled"

// leaseCheckTimeout bounds the start-up check: it only warns, so an API
// server slow to answer must not hold the daemon's start.
const leaseCheckTimeout = 5 * time.Second

// warnIfLeaseHeld warns when this replica starts without leader election
// (--leader-elect=false) while another controller manager holds the
// leader-election Lease and renewed it within its lease duration: both
// then run every controller against the same Nodes, Services and cloud
// resources, writing over each other, and nothing else tells. It reads
// the Lease once, logs the warning and records a Warning event on the
// Lease naming the holder and its renew time. It never fails the start:
// a Lease it cannot read or write is logged at V(2). Observe mode is
// left out, since its writes are dry runs made beside a leader on purpose.
func warnIfLeaseHeld(ctx context.Context, o *options.Options, restCfg *rest.Config) {
	if o.LeaderElect || o.Observe {
		return
	}
	log := klog.FromContext(ctx)
	cs, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restCfg), "leader-election-check"))
	if err != nil {
		log.V(2).Info("Cannot check the leader-election Lease", "err", err)
		return
	}
	host, _ := os.Hostname()
	ctx, cancel := context.WithTimeout(ctx, leaseCheckTimeout)
	defer cancel()
	checkLeaseHeld(ctx, cs, o.LeaderElectNamespace, o.LeaderElectName, clock.RealClock{}, host)
}

// checkLeaseHeld reads the Lease namespace/name and, when another holds it
// (its renewal plus its lease duration is still ahead of now), logs the
// warning and creates the event; it reports whether it warned. host is
// this process's host name: a holder identity of this host (client-go's
// "<host>_<uuid>") is this replica's previous process, whose lease runs
// out on its own, not another controller manager.
func checkLeaseHeld(ctx context.Context, cs kubernetes.Interface, namespace, name string, clk clock.PassiveClock, host string) bool {
	log := klog.FromContext(ctx).WithValues("lease", namespace+"/"+name)
	lease, err := cs.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		log.V(2).Info("Cannot read the leader-election Lease to check for another controller manager", "err", err)
		return false
	}
	holder, renewed, duration, held := leaseHolder(lease, clk.Now())
	if !held {
		return false
	}
	if host != "" && strings.HasPrefix(holder, host+"_") {
		log.Info("Leader election is disabled; the Lease still names this host's previous process until it expires", "holder", holder, "renewTime", renewed)
		return false
	}
	msg := fmt.Sprintf("This controller manager runs with --leader-elect=false while %s holds the Lease %s/%s (renewed %s, lease duration %s): both run the controllers and write the same Nodes, Services and cloud resources; stop one of them, or run this one with --leader-elect=true",
		holder, namespace, name, renewed.UTC().Format(time.RFC3339), duration)
	log.Error(nil, "Another controller manager holds the leader-election Lease while this one runs without leader election", "holder", holder, "renewTime", renewed, "leaseDuration", duration)
	if err := recordLeaseEvent(ctx, cs, lease, msg, clk.Now(), host); err != nil {
		log.V(2).Info("Cannot record the event on the Lease", "err", err)
	}
	return true
}

// leaseHolder returns who holds the Lease, when it was last renewed and
// for how long; held is false for a released Lease (no holder), one never
// renewed, or one whose lease ran out before now (on this process's clock:
// a check once at start, not the elector's observation over time).
func leaseHolder(l *coordinationv1.Lease, now time.Time) (holder string, renewed time.Time, duration time.Duration, held bool) {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return "", time.Time{}, 0, false
	}
	holder, renewed = *l.Spec.HolderIdentity, l.Spec.RenewTime.Time
	duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	return holder, renewed, duration, now.Before(renewed.Add(duration))
}

// recordLeaseEvent creates the Warning event on the Lease with the core
// events API, where leader election records its own, so that
// `kubectl describe lease` shows both. Created directly rather than
// through a broadcaster: the check runs once, and its one event must not
// wait in a queue that start-up may outlive or shut down.
func recordLeaseEvent(ctx context.Context, cs kubernetes.Interface, l *coordinationv1.Lease, msg string, now time.Time, host string) error {
	t := metav1.NewTime(now)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", l.Name, now.UnixNano()), Namespace: l.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease",
			Namespace: l.Namespace, Name: l.Name, UID: l.UID, ResourceVersion: l.ResourceVersion,
		},
		Reason: ReasonLeaseHeldWithoutElection, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: options.UserAgent, Host: host},
		FirstTimestamp: t, LastTimestamp: t, Count: 1,
	}
	if _, err := cs.CoreV1().Events(l.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create event on lease %s/%s: %w", l.Namespace, l.Name, err)
	}
	return nil
}
