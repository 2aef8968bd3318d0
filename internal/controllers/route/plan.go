package route

import (
	"net/netip"
	"reflect"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// plan is what one pass must do, computed from the Nodes and the route table
// without side effects so it can be tested on its own.
type plan struct {
	// remove are routes to delete: blackholes, routes for CIDRs no Node has,
	// and routes pointing at the wrong Node.
	remove []*cloudprovider.Route
	// create are the missing routes of routable Nodes.
	create []wantedRoute
	// routable are the Nodes whose routes this controller manages (pod
	// CIDRs and a providerID), by name, with how many routes each needs.
	routable map[string]*nodeRoutes
	// wanted holds every route a routable Node needs.
	wanted map[routeKey]bool
}

type wantedRoute struct {
	node     *corev1.Node
	key      routeKey
	nameHint string
}

// nodeRoutes tracks a routable Node's routes during a pass.
type nodeRoutes struct {
	node    *corev1.Node
	missing int      // routes not yet in the table
	errs    []string // creation failures of this pass, for the condition
}

// canonical parses a CIDR as the cloud or the API may spell it and returns
// its canonical form.
func canonical(s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	return p.Masked(), true
}

// nameHint is what CreateRoute receives to name the route. Upstream passes
// the Node's UID for every CIDR, which gives a dual-stack Node's two routes
// the same name on clouds that derive names from the hint; the second and
// later CIDRs therefore get the index appended.
func nameHint(n *corev1.Node, i int) string {
	if i == 0 {
		return string(n.UID)
	}
	return string(n.UID) + "-" + strconv.Itoa(i)
}

func buildPlan(nodes []corev1.Node, routes []*cloudprovider.Route, clusterCIDRs []netip.Prefix) *plan {
	// Sized up front: a pass over thousands of Nodes otherwise spends much
	// of its time growing maps.
	p := &plan{routable: make(map[string]*nodeRoutes, len(nodes)), wanted: make(map[routeKey]bool, 2*len(nodes))}
	// owner maps every pod CIDR any Node holds to that Node, including Nodes
	// without a providerID: their routes are left alone until they have one.
	owner := make(map[netip.Prefix]*corev1.Node, 2*len(nodes))
	for i := range nodes {
		n := &nodes[i]
		for _, s := range n.Spec.PodCIDRs {
			if c, ok := canonical(s); ok {
				owner[c] = n
			}
		}
		if len(n.Spec.PodCIDRs) > 0 && n.Spec.ProviderID != "" && n.DeletionTimestamp.IsZero() {
			p.routable[n.Name] = &nodeRoutes{node: n}
		}
	}
	present := make(map[netip.Prefix]bool, len(routes))
	for _, r := range routes {
		c, ok := canonical(r.DestinationCIDR)
		if !ok || !insideAny(c, clusterCIDRs) {
			continue // not a pod route of this cluster
		}
		n := owner[c]
		switch {
		case r.Blackhole, n == nil, string(r.TargetNode) != n.Name, addressesChanged(r, n):
			p.remove = append(p.remove, r)
		default:
			present[c] = true
		}
	}
	for name, nr := range p.routable {
		for i, s := range nr.node.Spec.PodCIDRs {
			c, ok := canonical(s)
			if !ok {
				continue
			}
			k := routeKey{cidr: c, node: name}
			p.wanted[k] = true
			if present[c] {
				continue
			}
			nr.missing++
			p.create = append(p.create, wantedRoute{node: nr.node, key: k, nameHint: nameHint(nr.node, i)})
		}
	}
	return p
}

func insideAny(c netip.Prefix, cluster []netip.Prefix) bool {
	for _, cc := range cluster {
		if cc.Overlaps(c) {
			return true
		}
	}
	return false
}

// addressesChanged is upstream's rule for clouds whose routes target node
// addresses (EnableNodeAddresses): such a route is replaced when the Node's
// addresses change.
func addressesChanged(r *cloudprovider.Route, n *corev1.Node) bool {
	if !r.EnableNodeAddresses {
		return false
	}
	if len(r.TargetNodeAddresses) != len(n.Status.Addresses) {
		return true
	}
	for _, a := range n.Status.Addresses {
		found := false
		for _, b := range r.TargetNodeAddresses {
			if reflect.DeepEqual(a, b) {
				found = true
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}
