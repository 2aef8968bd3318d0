package profile

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// routes is a double's route table: one route per destination CIDR, as
// hcloud's network routes and AWS' and Azure's route tables hold them,
// written to the state directory after every change.
type routes struct {
	st           state
	checkGateway bool

	mu     sync.Mutex
	byCIDR map[string]types.NodeName
}

var _ cloudprovider.Routes = (*routes)(nil)

func newRoutes(st state, checkGateway bool) *routes {
	return &routes{st: st, checkGateway: checkGateway, byCIDR: map[string]types.NodeName{}}
}

func (r *routes) ListRoutes(_ context.Context, clusterName string) ([]*cloudprovider.Route, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*cloudprovider.Route, 0, len(r.byCIDR))
	for cidr, node := range r.byCIDR {
		out = append(out, &cloudprovider.Route{Name: clusterName + "-" + cidr, TargetNode: node, DestinationCIDR: cidr})
	}
	return out, nil
}

// CreateRoute adds the route, replacing one to the same CIDR. With
// checkGateway (hcloud's) the route's target addresses must hold the
// machine's private address, which becomes the route's gateway.
func (r *routes) CreateRoute(_ context.Context, _, _ string, route *cloudprovider.Route) error {
	if r.checkGateway && !slices.ContainsFunc(route.TargetNodeAddresses, func(a corev1.NodeAddress) bool {
		return a.Type == corev1.NodeInternalIP && a.Address == NodeInternalIP
	}) {
		return fmt.Errorf("hcloud/CreateRoute: IP %s not part of routes target addresses", NodeInternalIP)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byCIDR[route.DestinationCIDR] = route.TargetNode
	r.persist()
	return nil
}

func (r *routes) DeleteRoute(_ context.Context, _ string, route *cloudprovider.Route) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byCIDR[route.DestinationCIDR]; !ok {
		return fmt.Errorf("route %s not found", route.Name)
	}
	delete(r.byCIDR, route.DestinationCIDR)
	r.persist()
	return nil
}

// persist writes the table, sorted; a failure to write is the test's to
// see (the state file lags), not the controller's.
func (r *routes) persist() {
	out := make([]Route, 0, len(r.byCIDR))
	for cidr, node := range r.byCIDR {
		out = append(out, Route{Node: string(node), CIDR: cidr})
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.CIDR, b.CIDR) })
	if err := r.st.write(routesFile, out); err != nil {
		fmt.Fprintf(os.Stderr, "vendor double: %v\n", err)
	}
}
