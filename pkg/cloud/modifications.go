package cloud

import (
	"context"
	"time"
)

// Kinds of cloud objects a Modification is about.
const (
	KindLoadBalancer = "loadBalancer"
	KindRoute        = "route"
)

// Modification is the last change the cloud recorded to one of a
// cluster's load balancers or routes: its creation, or the latest update
// of what a caller sets (listeners, backends; not a state the cloud moves
// it through by itself).
type Modification struct {
	// Kind is KindLoadBalancer or KindRoute.
	Kind string
	// Name is the cloud's name for the object, as ListLoadBalancers and
	// Routes.ListRoutes report it.
	Name string
	// At is when the change was made, by the cloud's clock.
	At time.Time
	// By is who made it, as the cloud recorded the caller (an account, a
	// role, a client's user agent); empty when the cloud does not say.
	By string
}

// ModificationLister is an optional extension: a provider that can tell
// when each of a cluster's load balancers and routes last changed lets
// `stratus teardown` see, without the cluster's API server, that a
// controller manager is still managing them, and refuse to delete the
// objects of a live cluster. Upstream's contract carries no timestamps.
//
// ListModifications returns the last modification of every load balancer
// and route the cluster owns, scoped by cluster name as ListLoadBalancers
// and ListRoutes are. Objects being deleted may be left out: a deletion is
// what a teardown itself makes. It must return an error, never a partial
// list, when the cloud cannot answer fully.
type ModificationLister interface {
	ListModifications(ctx context.Context, clusterName string) ([]Modification, error)
}
