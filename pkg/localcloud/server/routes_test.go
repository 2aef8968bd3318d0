package server_test

import (
	"errors"

	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

func TestRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(k *api.Knobs) { k.Quotas.RoutesPerCluster = 3 })
	n1, n2 := e.instance("n1"), e.instance("n2")
	mk := func(cluster, name, cidr, inst string) error {
		_, err := e.c.CreateRoute(e.ctx, cluster, api.CreateRouteRequest{Name: name, DestinationCIDR: cidr, InstanceID: inst})
		return err
	}
	if err := mk("c1", "r1", "10.244.1.0/24", n1.ID); err != nil {
		t.Fatal(err)
	}
	if err := mk("c1", "r2", "10.244.2.0/24", n2.ID); err != nil {
		t.Fatal(err)
	}
	if err := mk("c1", "r3", "10.244.1.0/24", n2.ID); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("duplicate destination: want ErrConflict, got %v", err)
	}
	if err := mk("c1", "r1", "10.244.9.0/24", n2.ID); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("duplicate name: want ErrConflict, got %v", err)
	}
	if err := mk("c2", "r1", "10.244.1.0/24", n1.ID); err != nil {
		t.Fatalf("other cluster's table is separate: %v", err)
	}
	if err := mk("c1", "r3", "fd00:10:244::/64", n1.ID); err != nil {
		t.Fatalf("IPv6 route: %v", err)
	}
	err := mk("c1", "r4", "10.244.4.0/24", n1.ID)
	var ae *client.APIError
	if !errors.Is(err, client.ErrQuotaExceeded) || !errors.As(err, &ae) || ae.StatusCode != 403 || ae.Field != "routesPerCluster" {
		t.Fatalf("quota: got %v", err)
	}
	routes, err := e.c.ListRoutes(e.ctx, "c1")
	if err != nil || len(routes) != 3 || routes[0].InstanceName != "n1" || routes[0].State != api.RouteActive {
		t.Fatalf("list: %v %+v", err, routes)
	}
	if _, err := e.c.DeleteInstance(e.ctx, n2.ID); err != nil {
		t.Fatal(err)
	}
	routes, _ = e.c.ListRoutes(e.ctx, "c1")
	if routes[1].Name != "r2" || routes[1].State != api.RouteBlackhole {
		t.Fatalf("route to terminated instance: %+v", routes[1])
	}
	if err := e.c.DeleteRoute(e.ctx, "c1", "r2"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.DeleteRoute(e.ctx, "c1", "r2"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("delete twice: want ErrNotFound, got %v", err)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"name":"x","destinationCIDR":"10.0.0.0","instanceId":"` + n1.ID + `"}`, "destinationCIDR"},
		{`{"name":"x","destinationCIDR":"10.0.0.0/8","instanceId":"n1"}`, "instanceId"},
		{`{"name":"x","destinationCIDR":"10.0.0.0/8","instanceId":"` + n2.ID + `"}`, "instanceId"},
		{`{"name":"","destinationCIDR":"10.0.0.0/8","instanceId":"` + n1.ID + `"}`, "name"},
		{`{"name":"x","destination":"10.0.0.0/8"}`, "destination"},
	} {
		code, body := e.raw("POST", "/v1/routetables/c1/routes", tc.body)
		if code != 400 || body.Field != tc.field {
			t.Errorf("%s: got %d %+v, want 400 field %s", tc.body, code, body, tc.field)
		}
	}
	if code, body := e.raw("GET", "/v1/routetables/Bad_Cluster/routes", ""); code != 400 || body.Field != "cluster" {
		t.Errorf("bad cluster: %d %+v", code, body)
	}
	routes, _ = e.c.ListRoutes(e.ctx, "c1")
	if len(routes) != 2 {
		t.Fatalf("bad requests changed the table: %+v", routes)
	}
}
