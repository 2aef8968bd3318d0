package teardown

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Kinds of cloud objects, as cloud.Modification names them too.
const (
	KindLoadBalancer = cloud.KindLoadBalancer
	KindRoute        = cloud.KindRoute
)

// States of an object in the summary.
const (
	// StatePlanned: a dry run found it and would delete it.
	StatePlanned = "planned"
	// StateDeleted: deleted, and the cloud's list no longer holds it.
	StateDeleted = "deleted"
	// StatePending: deletion accepted, but the cloud still listed it when
	// the wait ended.
	StatePending = "pending"
	// StateFailed: the cloud refused the deletion.
	StateFailed = "failed"
	// StateRefused: not provably this cluster's, left alone.
	StateRefused = "refused"
)

// Options configure one teardown.
type Options struct {
	// Cloud is the provider, built as the controller manager builds it.
	Cloud cloudprovider.Interface
	// ClusterName scopes every list and deletion (--cluster-name).
	ClusterName string
	// ClusterCIDRs, when set, bound the routes: one whose destination
	// lies outside all of them is refused.
	ClusterCIDRs []netip.Prefix
	// Apply deletes; without it the teardown only lists (a dry run).
	Apply bool
	// Wait bounds the wait for the cloud to confirm the deletions; zero
	// means five minutes.
	Wait time.Duration
	// Poll is how often the cloud's lists are read while waiting; zero
	// means two seconds.
	Poll time.Duration

	// Force deletes even when the cluster shows signs of life; the signs
	// are still looked for and reported.
	Force bool
	// ChangeWindow is how recent a change to one of the cluster's load
	// balancers or routes, by the cloud's record (cloud.ModificationLister),
	// must be to count as a sign of life; zero means DefaultChangeWindow.
	ChangeWindow time.Duration
	// Cluster, when set, is the cluster's API server (--kubeconfig): a
	// held leader-election Lease and LoadBalancer Services are signs of
	// life. One that does not answer is reported, not a sign.
	Cluster kubernetes.Interface
	// LeaseNamespace and LeaseName name the controller manager's
	// leader-election Lease; empty means DefaultLeaseNamespace and
	// DefaultLeaseName, the daemon's defaults.
	LeaseNamespace, LeaseName string
	// Now is the clock the window and the Lease are judged by; nil means
	// time.Now.
	Now func() time.Time
}

// Object is one cloud object of the cluster and what became of it.
type Object struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Service is the load balancer's Service, namespace/name (uid).
	Service string `json:"service,omitempty"`
	// Destination and Target are the route's CIDR and node.
	Destination string `json:"destination,omitempty"`
	Target      string `json:"target,omitempty"`
	State       string `json:"state"`
	// Reason says why an object failed, was refused or is pending.
	Reason string `json:"reason,omitempty"`

	svc   *corev1.Service
	route *cloudprovider.Route
}

// Summary is the teardown's result, also its JSON output.
type Summary struct {
	Cluster string   `json:"cluster"`
	DryRun  bool     `json:"dryRun"`
	Objects []Object `json:"objects"`
	// Counts by state.
	Counts map[string]int `json:"counts"`
	// SignsOfLife show that the cluster is alive; without Force, any one
	// of them refuses the deletion.
	SignsOfLife []Sign `json:"signsOfLife"`
	// Unchecked says which signs of life could not be looked for, and why.
	Unchecked []string `json:"unchecked,omitempty"`
	// ChangeWindow is the window the cloud's changes were judged by.
	ChangeWindow string `json:"changeWindow"`
	// RefusedAlive is true when the cluster shows signs of life and Force
	// was not given: nothing was deleted, and in a dry run --yes would
	// delete nothing.
	RefusedAlive bool `json:"refusedAlive"`
	// Forced is true when Force let the deletion go on despite signs of
	// life.
	Forced bool `json:"forced,omitempty"`
}

// Clean reports whether the cluster owns nothing the teardown could not
// delete: every object deleted (or, in a dry run, planned), none refused,
// failed or pending.
func (s Summary) Clean() bool {
	return s.Counts[StateFailed]+s.Counts[StatePending]+s.Counts[StateRefused] == 0
}

// ErrCannotList is returned when the provider cannot list what the cluster
// owns: without a list nothing can be proved to be the cluster's.
var ErrCannotList = errors.New("teardown: the provider cannot list the cluster's objects")

// Run lists the cluster's load balancers and routes, looks for signs that
// the cluster is alive and, with Apply, deletes them and waits until the
// cloud no longer lists them, unless the cluster shows a sign of life and
// Force was not given (RefusedAlive: nothing is deleted). The error is for
// what stopped the teardown (a list that failed); objects that failed,
// were refused or are pending are in the summary.
func Run(ctx context.Context, o Options) (Summary, error) {
	if o.ClusterName == "" {
		return Summary{}, errors.New("teardown: a cluster name is required: it scopes every list and deletion")
	}
	if o.Wait <= 0 {
		o.Wait = 5 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.ChangeWindow <= 0 {
		o.ChangeWindow = DefaultChangeWindow
	}
	s := Summary{Cluster: o.ClusterName, DryRun: !o.Apply, SignsOfLife: []Sign{}, ChangeWindow: o.ChangeWindow.String()}
	lbs, err := o.listLoadBalancers(ctx)
	if err != nil {
		return s, err
	}
	routes, err := o.listRoutes(ctx)
	if err != nil {
		return s, err
	}
	s.Objects = slices.Concat(lbs, routes)
	signs, unchecked, err := o.signsOfLife(ctx, s.Objects)
	if err != nil {
		return s.counted(), err
	}
	s.SignsOfLife, s.Unchecked = append(s.SignsOfLife, signs...), unchecked
	s.RefusedAlive = len(signs) > 0 && !o.Force
	s.Forced = len(signs) > 0 && o.Force
	if s.RefusedAlive {
		// Before any deletion: a live controller manager makes every
		// deleted load balancer again, with a new address, while its
		// Services advertise the old one.
		klog.FromContext(ctx).V(1).Info("Cluster shows signs of life; deleting nothing", "cluster", o.ClusterName, "signs", len(signs), "first", signs[0].Message)
		return s.counted(), nil
	}
	if o.Apply {
		o.deleteAll(ctx, s.Objects)
		if err := o.confirm(ctx, s.Objects); err != nil {
			return s.counted(), err
		}
	}
	return s.counted(), nil
}

func (s Summary) counted() Summary {
	s.Counts = map[string]int{}
	for _, obj := range s.Objects {
		s.Counts[obj.State]++
	}
	return s
}

func (o Options) listLoadBalancers(ctx context.Context) ([]Object, error) {
	if _, ok := o.Cloud.LoadBalancer(); !ok {
		return nil, nil
	}
	lister, ok := o.Cloud.(cloud.LoadBalancerLister)
	if !ok {
		return nil, fmt.Errorf("%w: provider %q has load balancers but does not implement cloud.LoadBalancerLister",
			ErrCannotList, o.Cloud.ProviderName())
	}
	found, err := lister.ListLoadBalancers(ctx, o.ClusterName)
	if err != nil {
		return nil, fmt.Errorf("teardown: list the load balancers of cluster %q: %w", o.ClusterName, err)
	}
	out := make([]Object, 0, len(found))
	for _, f := range found {
		obj := Object{Kind: KindLoadBalancer, Name: f.Name, State: StatePlanned,
			Service: fmt.Sprintf("%s/%s (%s)", f.ServiceNamespace, f.ServiceName, f.ServiceUID)}
		if f.ServiceNamespace == "" || f.ServiceName == "" || f.ServiceUID == "" {
			obj.State, obj.Reason = StateRefused, "the cloud did not record the Service it was made for, so it cannot be proved to be this cluster's"
		} else {
			obj.svc = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.ServiceNamespace, Name: f.ServiceName, UID: f.ServiceUID}}
		}
		out = append(out, obj)
	}
	return out, nil
}

func (o Options) listRoutes(ctx context.Context) ([]Object, error) {
	rt, ok := o.Cloud.Routes()
	if !ok {
		return nil, nil
	}
	found, err := rt.ListRoutes(ctx, o.ClusterName)
	if err != nil {
		return nil, fmt.Errorf("teardown: list the routes of cluster %q: %w", o.ClusterName, err)
	}
	out := make([]Object, 0, len(found))
	for _, r := range found {
		obj := Object{Kind: KindRoute, Name: r.Name, Destination: r.DestinationCIDR, Target: string(r.TargetNode), State: StatePlanned, route: r}
		if why := o.outside(r.DestinationCIDR); why != "" {
			obj.State, obj.Reason, obj.route = StateRefused, why, nil
		}
		out = append(out, obj)
	}
	return out, nil
}

// outside says why a route's destination is not provably the cluster's,
// or "" when it is (or no cluster CIDR bounds it).
func (o Options) outside(dest string) string {
	if len(o.ClusterCIDRs) == 0 {
		return ""
	}
	p, err := netip.ParsePrefix(dest)
	if err != nil {
		return fmt.Sprintf("destination %q is not a CIDR", dest)
	}
	for _, c := range o.ClusterCIDRs {
		if c.Bits() <= p.Bits() && c.Contains(p.Addr()) {
			return ""
		}
	}
	return fmt.Sprintf("destination %s is outside the cluster CIDRs %v", dest, o.ClusterCIDRs)
}

func (o Options) deleteAll(ctx context.Context, objs []Object) {
	logger := klog.FromContext(ctx)
	lb, _ := o.Cloud.LoadBalancer()
	rt, _ := o.Cloud.Routes()
	for i := range objs {
		obj := &objs[i]
		if obj.State != StatePlanned {
			continue
		}
		var err error
		switch obj.Kind {
		case KindLoadBalancer:
			err = lb.EnsureLoadBalancerDeleted(ctx, o.ClusterName, obj.svc)
		case KindRoute:
			err = rt.DeleteRoute(ctx, o.ClusterName, obj.route)
		}
		if err != nil {
			obj.State, obj.Reason = StateFailed, err.Error()
			logger.Error(err, "Deletion refused", "kind", obj.Kind, "name", obj.Name)
			continue
		}
		obj.State = StatePending
		logger.V(2).Info("Deletion started", "kind", obj.Kind, "name", obj.Name)
	}
}

// confirm reads the cloud's lists until none of the pending objects is in
// them, or the wait ends: a deletion the cloud accepted may take time
// (load balancers drain), and a teardown that returns early would let
// cluster-deletion tooling remove credentials the cloud still needs.
func (o Options) confirm(ctx context.Context, objs []Object) error {
	deadline := time.Now().Add(o.Wait)
	for {
		left, err := o.stillListed(ctx)
		if err != nil {
			return err
		}
		pending := 0
		for i := range objs {
			if objs[i].State != StatePending {
				continue
			}
			if left[objs[i].Kind+"/"+objs[i].Name] {
				pending++
				continue
			}
			objs[i].State = StateDeleted
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for i := range objs {
				if objs[i].State == StatePending {
					objs[i].Reason = fmt.Sprintf("the cloud still listed it %v after the deletion", o.Wait)
				}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("teardown: waiting for the cloud to confirm: %w", ctx.Err())
		case <-time.After(o.Poll):
		}
	}
}

// stillListed returns what the cloud lists for the cluster now, by kind/name.
func (o Options) stillListed(ctx context.Context) (map[string]bool, error) {
	lbs, err := o.listLoadBalancers(ctx)
	if err != nil {
		return nil, err
	}
	routes, err := o.listRoutes(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(lbs)+len(routes))
	for _, obj := range append(lbs, routes...) {
		out[obj.Kind+"/"+obj.Name] = true
	}
	return out, nil
}
