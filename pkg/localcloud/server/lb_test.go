package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

func lbRequest(name string, backends ...string) api.CreateLoadBalancerRequest {
	return api.CreateLoadBalancerRequest{
		Name: name, Cluster: "c1",
		Tags: map[string]string{api.TagServiceNamespace: "default", api.TagServiceName: "web", api.TagServiceUID: "uid-1"},
		LoadBalancerSpec: api.LoadBalancerSpec{
			Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: 30080}},
			Backends:  backends,
		},
	}
}

func TestLoadBalancerLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(k *api.Knobs) {
		k.LBProvisioningTime = api.Duration(300 * time.Millisecond)
		k.LBDeletionTime = api.Duration(100 * time.Millisecond)
	})
	n1 := e.instance("n1")
	lb, err := e.c.CreateLoadBalancer(e.ctx, lbRequest("lb-one", n1.ID))
	if err != nil {
		t.Fatal(err)
	}
	if lb.Status != api.LBProvisioning || !e.cfg.Pools.VIP.Contains(parse(t, lb.VIP)) {
		t.Fatalf("new load balancer %+v", lb)
	}
	if _, err := e.c.CreateLoadBalancer(e.ctx, lbRequest("lb-one")); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("duplicate create: want ErrConflict, got %v", err)
	}
	// Same name in another cluster is a different load balancer.
	other := lbRequest("lb-one")
	other.Cluster = "c2"
	if _, err := e.c.CreateLoadBalancer(e.ctx, other); err != nil {
		t.Fatalf("same name, other cluster: %v", err)
	}
	waitFor(t, "active", func() bool {
		got, err := e.c.GetLoadBalancer(e.ctx, lb.ID)
		return err == nil && got.Status == api.LBActive
	})
	spec := lb.LoadBalancerSpec
	spec.Listeners = append(spec.Listeners, api.Listener{Protocol: api.ProtocolUDP, Port: 53, NodePort: 30053})
	spec.SourceRanges = []string{"10.0.0.0/8"}
	upd, err := e.c.UpdateLoadBalancer(e.ctx, lb.ID, spec)
	if err != nil || len(upd.Listeners) != 2 || upd.Status != api.LBActive {
		t.Fatalf("update: %v %+v", err, upd)
	}
	list, err := e.c.ListAllLoadBalancers(e.ctx, client.ListOptions{Cluster: "c1", Name: "lb-one"})
	if err != nil || len(list) != 1 || list[0].ID != lb.ID {
		t.Fatalf("list by cluster and name: %v %+v", err, list)
	}
	byTag, _ := e.c.ListAllLoadBalancers(e.ctx, client.ListOptions{Tags: map[string]string{api.TagServiceUID: "uid-1"}})
	if len(byTag) != 2 {
		t.Fatalf("list by tag: %d", len(byTag))
	}
	del, err := e.c.DeleteLoadBalancer(e.ctx, lb.ID)
	if err != nil || del.Status != api.LBDeleting {
		t.Fatalf("delete: %v %+v", err, del)
	}
	if _, err := e.c.UpdateLoadBalancer(e.ctx, lb.ID, spec); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("update while deleting: want ErrConflict, got %v", err)
	}
	waitFor(t, "gone", func() bool {
		_, err := e.c.GetLoadBalancer(e.ctx, lb.ID)
		return errors.Is(err, client.ErrNotFound)
	})
	s := e.stats()
	for _, op := range []string{"CreateLoadBalancer", "GetLoadBalancer", "UpdateLoadBalancer", "ListLoadBalancers", "DeleteLoadBalancer"} {
		if s.Count(op) == 0 {
			t.Errorf("no count for %s: %+v", op, s.Operations)
		}
	}
	if s.Operations["CreateLoadBalancer"].ByCode["409"] != 1 {
		t.Errorf("409 not counted: %+v", s.Operations["CreateLoadBalancer"])
	}
}

func TestLoadBalancerBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(k *api.Knobs) { k.Quotas.LoadBalancers = 1 })
	n1 := e.instance("n1")
	ok := `"name":"x","cluster":"c1"`
	l := `"listeners":[{"protocol":"TCP","port":80,"nodePort":30080}]`
	cases := []struct {
		name, method, path, body string
		code                     int
		field                    string
	}{
		{"no listeners", "POST", "/v1/loadbalancers", `{` + ok + `}`, 400, "listeners"},
		{"sctp", "POST", "/v1/loadbalancers", `{` + ok + `,"listeners":[{"protocol":"SCTP","port":80,"nodePort":30080}]}`, 400, "listeners[0].protocol"},
		{"port zero", "POST", "/v1/loadbalancers", `{` + ok + `,"listeners":[{"protocol":"TCP","port":0,"nodePort":30080}]}`, 400, "listeners[0].port"},
		{"node port too big", "POST", "/v1/loadbalancers", `{` + ok + `,"listeners":[{"protocol":"UDP","port":53,"nodePort":70000}]}`, 400, "listeners[0].nodePort"},
		{"bad cidr", "POST", "/v1/loadbalancers", `{` + ok + `,` + l + `,"sourceRanges":["10.0.0.0/33"]}`, 400, "sourceRanges[0]"},
		{"host bits", "POST", "/v1/loadbalancers", `{` + ok + `,` + l + `,"sourceRanges":["10.0.0.1/8"]}`, 400, "sourceRanges[0]"},
		{"bad backend id", "POST", "/v1/loadbalancers", `{` + ok + `,` + l + `,"backends":["node-1"]}`, 400, "backends[0]"},
		{"unknown backend", "POST", "/v1/loadbalancers", `{` + ok + `,` + l + `,"backends":["i-0123456789abcdef"]}`, 400, "backends[0]"},
		{"bad threshold", "POST", "/v1/loadbalancers", `{` + ok + `,` + l + `,"healthCheck":{"healthyThreshold":-1}}`, 400, "healthCheck.healthyThreshold"},
		{"unknown field", "POST", "/v1/loadbalancers", `{` + ok + `,` + l + `,"vip":"1.2.3.4"}`, 400, "vip"},
		{"bad cluster", "POST", "/v1/loadbalancers", `{"name":"x","cluster":"C 1",` + l + `}`, 400, "cluster"},
		{"bad lb id", "GET", "/v1/loadbalancers/i-0123456789abcdef", ``, 400, "id"},
		{"unknown lb", "DELETE", "/v1/loadbalancers/lb-0123456789abcdef", ``, 404, "id"},
		{"update unknown", "PUT", "/v1/loadbalancers/lb-0123456789abcdef", `{` + l + `}`, 404, "id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.raw(tc.method, tc.path, tc.body)
			if code != tc.code || body.Field != tc.field {
				t.Fatalf("got %d %+v, want %d field %q", code, body, tc.code, tc.field)
			}
		})
	}
	if _, err := e.c.CreateLoadBalancer(e.ctx, lbRequest("first", n1.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateLoadBalancer(e.ctx, lbRequest("second")); !errors.Is(err, client.ErrQuotaExceeded) {
		t.Fatalf("want ErrQuotaExceeded, got %v", err)
	}
	all, _ := e.c.ListAllLoadBalancers(e.ctx, client.ListOptions{})
	if len(all) != 1 {
		t.Fatalf("bad requests left %d load balancers", len(all))
	}
}
