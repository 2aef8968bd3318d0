package conformance

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	corev1 "k8s.io/api/core/v1"
)

func nodeName(n *corev1.Node) types.NodeName { return types.NodeName(n.Name) }

func (s *suite) needRoutes() string {
	switch {
	case s.routes == nil:
		return "the provider implements no Routes"
	case s.cfg.Route == nil && len(s.cfg.Instances) == 0:
		return "Config.Route is nil and Config.Instances is empty (no node to route to)"
	}
	return ""
}

func (s *suite) route() *cloudprovider.Route {
	if s.cfg.Route != nil {
		r := *s.cfg.Route
		return &r
	}
	return &cloudprovider.Route{TargetNode: nodeName(s.cfg.Instances[0]), DestinationCIDR: "10.254.254.0/24"}
}

// routeChecks: the route controller lists the cluster's routes once per
// pass and creates only what the list lacks and deletes only what it
// shows, so it relies on ListRoutes telling the truth after a create or a
// delete (even one whose answer was lost), not on CreateRoute and
// DeleteRoute being idempotent: those two checks are recommended.
func routeChecks() []check {
	return []check{
		{
			name:    "CreatedRouteIsListed",
			why:     "the route controller lists routes every pass and creates what is missing: a created route that ListRoutes does not show (with its node and CIDR) is created again every pass.",
			needs:   (*suite).needRoutes,
			cleanup: removeRoutes,
			test: func(ctx context.Context, s *suite) error {
				r := s.route()
				if err := s.createRoute(ctx, r); err != nil {
					return fmt.Errorf("CreateRoute(%s → %s): %w", r.DestinationCIDR, r.TargetNode, err)
				}
				// The cleanup deletes it; DeletedRouteIsNotListed is the
				// check that judges deletion.
				return s.routeListed(ctx, r, 1)
			},
		},
		{
			name:    "DeletedRouteIsNotListed",
			why:     "the route controller deletes the routes ListRoutes shows for nodes that are gone, as ListRoutes returns them: a route still listed after DeleteRoute succeeded is deleted again every pass, and its CIDR cannot be given to a new node.",
			needs:   (*suite).needRoutes,
			cleanup: removeRoutes,
			test: func(ctx context.Context, s *suite) error {
				r := s.route()
				if err := s.createRoute(ctx, r); err != nil {
					return fmt.Errorf("CreateRoute(%s → %s): %w", r.DestinationCIDR, r.TargetNode, err)
				}
				if err := s.deleteListed(ctx, r, 1); err != nil {
					return err
				}
				return s.routeListed(ctx, r, 0)
			},
		},
		{
			name:        "CreateIsIdempotent",
			recommended: true,
			why:         "a caller that retries a CreateRoute whose answer was lost, without listing first, gets an error for a route that exists. Stratus lists before it creates and does not need this; other tools may.",
			needs:       (*suite).needRoutes,
			cleanup:     removeRoutes,
			test: func(ctx context.Context, s *suite) error {
				r := s.route()
				for i := range 2 {
					if err := s.createRoute(ctx, r); err != nil {
						return fmt.Errorf("CreateRoute(%s → %s), call %d: %w", r.DestinationCIDR, r.TargetNode, i+1, err)
					}
				}
				return s.routeListed(ctx, r, 1)
			},
		},
		{
			name:        "DeleteIsIdempotent",
			recommended: true,
			why:         "a caller that retries a DeleteRoute whose answer was lost, without listing first, gets an error for a route already deleted. Stratus deletes only what ListRoutes shows and does not need this; other tools may.",
			needs:       (*suite).needRoutes,
			cleanup:     removeRoutes,
			test: func(ctx context.Context, s *suite) error {
				r := s.route()
				if err := s.createRoute(ctx, r); err != nil {
					return fmt.Errorf("CreateRoute(%s → %s): %w", r.DestinationCIDR, r.TargetNode, err)
				}
				return s.deleteListed(ctx, r, 2)
			},
		},
	}
}

// removeRoutes deletes every route listed for the checks' CIDR: what a
// route check created, whether or not it got as far as deleting it.
func removeRoutes(ctx context.Context, s *suite) error {
	r := s.route()
	listed, err := s.findRoutes(ctx, r)
	if err != nil {
		return err
	}
	for _, l := range listed {
		if _, err := retrying(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, s.routes.DeleteRoute(ctx, s.cfg.ClusterName, l)
		}); err != nil {
			return fmt.Errorf("DeleteRoute(%s → %s): %w", l.DestinationCIDR, l.TargetNode, err)
		}
	}
	return nil
}

// deleteListed deletes the route listed for r's CIDR, times times in a
// row, and checks that it is no longer listed.
func (s *suite) deleteListed(ctx context.Context, r *cloudprovider.Route, times int) error {
	listed, err := s.findRoutes(ctx, r)
	if err != nil {
		return err
	}
	if len(listed) == 0 {
		return fmt.Errorf("the created route %s → %s is not listed", r.DestinationCIDR, r.TargetNode)
	}
	for i := range times {
		if _, err := retrying(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, s.routes.DeleteRoute(ctx, s.cfg.ClusterName, listed[0])
		}); err != nil {
			return fmt.Errorf("DeleteRoute(%s → %s), call %d: %w", r.DestinationCIDR, r.TargetNode, i+1, err)
		}
	}
	return s.routeListed(ctx, r, 0)
}

func (s *suite) createRoute(ctx context.Context, r *cloudprovider.Route) error {
	_, err := retrying(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.routes.CreateRoute(ctx, s.cfg.ClusterName, "conformance", r)
	})
	return err
}

func (s *suite) findRoutes(ctx context.Context, r *cloudprovider.Route) ([]*cloudprovider.Route, error) {
	all, err := retrying(ctx, func(ctx context.Context) ([]*cloudprovider.Route, error) {
		return s.routes.ListRoutes(ctx, s.cfg.ClusterName)
	})
	if err != nil {
		return nil, fmt.Errorf("ListRoutes: %w", err)
	}
	var out []*cloudprovider.Route
	for _, got := range all {
		if got != nil && got.DestinationCIDR == r.DestinationCIDR {
			out = append(out, got)
		}
	}
	return out, nil
}

func (s *suite) routeListed(ctx context.Context, r *cloudprovider.Route, want int) error {
	got, err := s.findRoutes(ctx, r)
	if err != nil {
		return err
	}
	if len(got) != want {
		return fmt.Errorf("ListRoutes shows %d routes for %s, want %d", len(got), r.DestinationCIDR, want)
	}
	for _, g := range got {
		if g.TargetNode != r.TargetNode {
			return fmt.Errorf("ListRoutes shows the route for %s to node %q, want %q", r.DestinationCIDR, g.TargetNode, r.TargetNode)
		}
	}
	return nil
}
