package teardown

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Kinds of signs of life.
const (
	// SignCloudChange: one of the cluster's load balancers or routes
	// changed within the change window, as a controller manager changes
	// them while it runs.
	SignCloudChange = "cloudChange"
	// SignLease: the leader-election Lease is held and was renewed within
	// its lease duration: a controller manager is leading now.
	SignLease = "lease"
	// SignServices: Services of type LoadBalancer still exist: a
	// controller manager that runs, or comes back, makes their load
	// balancers again, with new addresses.
	SignServices = "services"
)

// Defaults of the liveness checks.
const (
	// DefaultChangeWindow is how recent a change to a load balancer or
	// route must be to count as a sign of life: a few resync periods of
	// the controllers, and long enough that a teardown run just after
	// stopping the controller manager still sees its last changes.
	DefaultChangeWindow = 10 * time.Minute
	// DefaultLeaseNamespace and DefaultLeaseName are the daemon's
	// --leader-elect-resource-namespace and --leader-elect-resource-name.
	DefaultLeaseNamespace = "kube-system"
	DefaultLeaseName      = "cloud-controller-manager"
	// clusterTimeout bounds the calls to the cluster's API server: one
	// that does not answer is reported, and must not hold the teardown.
	clusterTimeout = 15 * time.Second
	// servicesNamed is how many LoadBalancer Services a sign names.
	servicesNamed = 5
)

// Sign is one sign that the cluster is alive.
type Sign struct {
	Kind string `json:"kind"`
	// Object is what shows it: "loadBalancer NAME", "route NAME",
	// "Lease NAMESPACE/NAME", "Services".
	Object string `json:"object"`
	// At is when it changed, or when the Lease was last renewed.
	At time.Time `json:"at,omitzero"`
	// By is who changed it (as the cloud recorded the caller), or the
	// Lease's holder; empty when unknown.
	By string `json:"by,omitempty"`
	// Message says it in a sentence.
	Message string `json:"message"`
}

// ErrAlive is what AliveError wraps, for errors.Is.
var ErrAlive = errors.New("teardown: the cluster shows signs of life")

// AliveError says that the teardown deleted nothing (or, in a dry run,
// that --yes would delete nothing) because the cluster shows signs of
// life and Force was not given. Its exit code is ExitAlive.
type AliveError struct{ Summary Summary }

func (e *AliveError) Error() string {
	what := "deleted nothing"
	if e.Summary.DryRun {
		what = "--yes would be refused"
	}
	first := ""
	if len(e.Summary.SignsOfLife) > 0 {
		first = ": " + e.Summary.SignsOfLife[0].Message
	}
	return fmt.Sprintf("teardown: cluster %q shows %d sign(s) of life, %s (--force overrides)%s",
		e.Summary.Cluster, len(e.Summary.SignsOfLife), what, first)
}

// Unwrap makes errors.Is(err, ErrAlive) hold.
func (e *AliveError) Unwrap() error { return ErrAlive }

// ExitCode is the process exit code for this outcome.
func (e *AliveError) ExitCode() int { return ExitAlive }

// signsOfLife looks for what shows the cluster alive, without its API
// server (the cloud's record of recent changes) and, when given one, with
// it (the leader-election Lease, LoadBalancer Services). It returns the
// signs, and what it could not look at and why. Only a cloud that cannot
// answer is an error, and only without Force: the cloud is what the
// teardown is about to act on.
func (o Options) signsOfLife(ctx context.Context, objs []Object) (signs []Sign, unchecked []string, err error) {
	cloudSigns, note, err := o.cloudChanges(ctx, objs)
	switch {
	case err != nil && !o.Force:
		return nil, nil, err
	case err != nil:
		note = fmt.Sprintf("the cloud's record of recent changes: %v", err)
	}
	signs = append(signs, cloudSigns...)
	if note != "" {
		unchecked = append(unchecked, note)
	}
	if o.Cluster == nil {
		unchecked = append(unchecked, "the cluster's API server (no --kubeconfig): its leader-election Lease and LoadBalancer Services")
		return signs, unchecked, nil
	}
	cctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	if s, note := o.leaseHeld(cctx); s != nil {
		signs = append(signs, *s)
	} else if note != "" {
		unchecked = append(unchecked, note)
	}
	if s, note := o.loadBalancerServices(cctx); s != nil {
		signs = append(signs, *s)
	} else if note != "" {
		unchecked = append(unchecked, note)
	}
	return signs, unchecked, nil
}

// cloudChanges reports the cluster's load balancers and routes that the
// cloud says changed within the window, newest first. objs, the listed
// objects, give a load balancer's Service for the message.
func (o Options) cloudChanges(ctx context.Context, objs []Object) ([]Sign, string, error) {
	lister, ok := o.Cloud.(cloud.ModificationLister)
	if !ok {
		return nil, fmt.Sprintf("the cloud's record of recent changes: provider %q does not report when its objects changed (cloud.ModificationLister), "+
			"so the cloud cannot tell whether a controller manager still manages them", o.Cloud.ProviderName()), nil
	}
	mods, err := lister.ListModifications(ctx, o.ClusterName)
	if err != nil {
		return nil, "", fmt.Errorf("teardown: list when the objects of cluster %q changed: %w", o.ClusterName, err)
	}
	services := map[string]string{}
	for _, obj := range objs {
		if obj.Kind == KindLoadBalancer && obj.svc != nil {
			services[obj.Name] = obj.Service
		}
	}
	now := o.now()
	since := now.Add(-o.ChangeWindow)
	var signs []Sign
	for _, m := range mods {
		if m.At.Before(since) {
			continue
		}
		object := m.Kind + " " + m.Name
		what := object
		if svc := services[m.Name]; m.Kind == cloud.KindLoadBalancer && svc != "" {
			what += " (Service " + svc + ")"
		}
		msg := fmt.Sprintf("%s changed %s ago, at %s, within the last %v", what, age(now, m.At), m.At.UTC().Format(time.RFC3339), o.ChangeWindow)
		if m.By != "" {
			msg += ", by " + m.By
		}
		signs = append(signs, Sign{Kind: SignCloudChange, Object: object, At: m.At, By: m.By, Message: msg})
	}
	slices.SortStableFunc(signs, func(a, b Sign) int { return b.At.Compare(a.At) })
	klog.FromContext(ctx).V(2).Info("Read the cloud's record of changes", "objects", len(mods), "recent", len(signs), "window", o.ChangeWindow)
	return signs, "", nil
}

// leaseHeld reports the leader-election Lease when a holder renewed it
// within its lease duration. Without a sign it may say what it could not
// read.
func (o Options) leaseHeld(ctx context.Context) (*Sign, string) {
	ns, name := cmp.Or(o.LeaseNamespace, DefaultLeaseNamespace), cmp.Or(o.LeaseName, DefaultLeaseName)
	ref := "Lease " + ns + "/" + name
	lease, err := o.Cluster.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, ""
	case err != nil:
		return nil, unreachable(ref, err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" || lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return nil, ""
	}
	renewed := lease.Spec.RenewTime.Time
	duration := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	now := o.now()
	if now.After(renewed.Add(duration)) {
		return nil, ""
	}
	return &Sign{Kind: SignLease, Object: ref, At: renewed, By: holder,
		Message: fmt.Sprintf("%s is held by %s, renewed %s ago, at %s, within its lease duration of %v: a controller manager is leading",
			ref, holder, age(now, renewed), renewed.UTC().Format(time.RFC3339), duration)}, ""
}

// loadBalancerServices reports the Services of type LoadBalancer that this
// controller manager serves (no spec.loadBalancerClass: a class names
// another controller).
func (o Options) loadBalancerServices(ctx context.Context) (*Sign, string) {
	list, err := o.Cluster.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, unreachable("Services", err)
	}
	var names []string
	for _, svc := range list.Items {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil {
			names = append(names, svc.Namespace+"/"+svc.Name)
		}
	}
	if len(names) == 0 {
		return nil, ""
	}
	slices.Sort(names)
	shown := strings.Join(names[:min(len(names), servicesNamed)], ", ")
	if len(names) > servicesNamed {
		shown += fmt.Sprintf(" and %d more", len(names)-servicesNamed)
	}
	return &Sign{Kind: SignServices, Object: "Services",
		Message: fmt.Sprintf("%d Service(s) of type LoadBalancer still exist (%s): a running controller manager makes their load balancers again, with new addresses",
			len(names), shown)}, ""
}

// unreachable says that the API server did not answer for what: a cluster
// whose API server is down may be alive or dead, so this is no sign, only
// a check not made.
func unreachable(what string, err error) string {
	return fmt.Sprintf("%s: the cluster's API server did not answer (%v); that is a sign of nothing", what, err)
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// age is how long ago at was, rounded for people; zero when at is ahead
// of now (the other clock is ahead).
func age(now, at time.Time) time.Duration {
	return max(now.Sub(at), 0).Round(time.Second)
}
