package store

import (
	"fmt"
	"sort"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

func routeKey(cluster, name string) string { return cluster + "/" + name }

// CreateRoute adds a route to a cluster's table. Names and destinations
// are unique within the table; the target must be a live instance. by is
// the caller, recorded as who created it.
func (s *Store) CreateRoute(cluster string, r api.CreateRouteRequest, quota int, now time.Time, by string) (api.Route, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	table := s.routeTables[cluster]
	if _, dup := table[r.Name]; dup {
		return api.Route{}, api.Conflict("name", fmt.Sprintf("route %q already exists in cluster %q", r.Name, cluster))
	}
	want, err := api.ParseCIDR("destinationCIDR", r.DestinationCIDR)
	if err != nil {
		return api.Route{}, err
	}
	for _, ex := range table {
		if p, _ := api.ParseCIDR("", ex.DestinationCIDR); p == want {
			return api.Route{}, api.Conflict("destinationCIDR",
				fmt.Sprintf("destination %s is already routed by %q", r.DestinationCIDR, ex.Name))
		}
	}
	if len(table) >= quota {
		return api.Route{}, api.QuotaExceeded("routesPerCluster", quota)
	}
	inst, ok := s.instances.items[r.InstanceID]
	if !ok || inst.State == api.InstanceTerminated {
		return api.Route{}, api.Invalid("instanceId", fmt.Sprintf("instance %s does not exist", r.InstanceID))
	}
	rt := &api.Route{
		Name: r.Name, Cluster: cluster, DestinationCIDR: want.String(),
		InstanceID: r.InstanceID, CreatedAt: now.UTC(), CreatedBy: by,
	}
	if err := s.routes.save(s.db, rt); err != nil {
		return api.Route{}, err
	}
	s.indexRoute(rt)
	return s.decorate(*rt), nil
}

// decorate fills the read-time fields of a route from its instance.
func (s *Store) decorate(r api.Route) api.Route {
	r.State = api.RouteBlackhole
	if inst, ok := s.instances.items[r.InstanceID]; ok {
		r.InstanceName = inst.Name
		if inst.State != api.InstanceTerminated {
			r.State = api.RouteActive
		}
	}
	return r
}

// ListRoutes returns a cluster's routes sorted by name.
func (s *Store) ListRoutes(cluster string) []api.Route {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]api.Route, 0, len(s.routeTables[cluster]))
	for _, r := range s.routeTables[cluster] {
		out = append(out, s.decorate(*r))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AllRoutes returns every cluster's routes, sorted by cluster then name,
// for the data plane's namespace to follow.
func (s *Store) AllRoutes() []api.Route {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []api.Route
	for _, table := range s.routeTables {
		for _, r := range table {
			out = append(out, s.decorate(*r))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cluster != out[j].Cluster {
			return out[i].Cluster < out[j].Cluster
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// DeleteRoute removes a route by name.
func (s *Store) DeleteRoute(cluster, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.routeTables[cluster][name]
	if !ok {
		return api.NotFound("name", fmt.Sprintf("route %q not found in cluster %q", name, cluster))
	}
	if err := s.routes.remove(s.db, routeKey(cluster, name)); err != nil {
		return err
	}
	s.unindexRoute(rt)
	return nil
}
