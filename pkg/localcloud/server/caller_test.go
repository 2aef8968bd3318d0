package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// A load balancer records when and by whom its spec was last set (the
// caller's User-Agent, without control characters, bounded), and keeps it
// through the cloud's own status moves and a restart; a route records its
// creator. Callers that name themselves no otherwise are the client's
// default.
func TestChangesRecordTheirCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(k *api.Knobs) { k.LBProvisioningTime = api.Duration(50 * time.Millisecond) })
	n := e.instance("n1")
	ccm, err := client.New(e.srv.URL(), e.token, client.WithUserAgent("ccm (host a,\tpid 7)"))
	if err != nil {
		t.Fatal(err)
	}
	spec := api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: 30080}}, Backends: []string{n.ID}}
	lb, err := ccm.CreateLoadBalancer(e.ctx, api.CreateLoadBalancerRequest{Name: "web", Cluster: "c1", LoadBalancerSpec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if lb.UpdatedBy != "ccm (host a,pid 7)" || !lb.UpdatedAt.Equal(lb.CreatedAt) {
		t.Fatalf("created: updatedBy %q at %s (created %s), want the caller at the creation", lb.UpdatedBy, lb.UpdatedAt, lb.CreatedAt)
	}
	waitFor(t, "the load balancer to be active", func() bool {
		got, err := e.c.GetLoadBalancer(e.ctx, lb.ID)
		return err == nil && got.Status == api.LBActive
	})
	if got, _ := e.c.GetLoadBalancer(e.ctx, lb.ID); !got.UpdatedAt.Equal(lb.UpdatedAt) || got.UpdatedBy != lb.UpdatedBy {
		t.Errorf("after activation: updated %s by %q, want the creation's %s by %q", got.UpdatedAt, got.UpdatedBy, lb.UpdatedAt, lb.UpdatedBy)
	}
	long, err := client.New(e.srv.URL(), e.token, client.WithUserAgent(strings.Repeat("x", 1000)))
	if err != nil {
		t.Fatal(err)
	}
	spec.Listeners[0].Port = 81
	up, err := long.UpdateLoadBalancer(e.ctx, lb.ID, spec)
	if err != nil {
		t.Fatal(err)
	}
	if up.UpdatedBy != strings.Repeat("x", 256) || up.UpdatedAt.Before(lb.UpdatedAt) {
		t.Errorf("updated: by %d characters at %s, want 256 and no earlier than %s", len(up.UpdatedBy), up.UpdatedAt, lb.UpdatedAt)
	}
	rt, err := e.c.CreateRoute(e.ctx, "c1", api.CreateRouteRequest{Name: "r1", DestinationCIDR: "10.244.1.0/24", InstanceID: n.ID})
	if err != nil || rt.CreatedBy != client.DefaultUserAgent || rt.CreatedAt.IsZero() {
		t.Fatalf("route: %+v, %v; want it created by %q", rt, err, client.DefaultUserAgent)
	}
	e.restart()
	if got, _ := e.c.GetLoadBalancer(e.ctx, lb.ID); got.UpdatedBy != up.UpdatedBy || !got.UpdatedAt.Equal(up.UpdatedAt) {
		t.Errorf("after a restart: updated %s by %d characters, want what was saved", got.UpdatedAt, len(got.UpdatedBy))
	}
	if rs, _ := e.c.ListRoutes(e.ctx, "c1"); len(rs) != 1 || rs[0].CreatedBy != client.DefaultUserAgent {
		t.Errorf("routes after a restart: %+v", rs)
	}
}
