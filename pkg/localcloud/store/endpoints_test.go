package store

import (
	"reflect"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// TestEndpointTargetsRoundTrip: a load balancer's endpoints survive a
// restart, the record does not share them with the caller's spec, and
// moving it from endpoint targets to node targets and back keeps its VIP.
func TestEndpointTargetsRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, DefaultPools())
	insts, err := s.CreateInstances([]api.CreateInstanceRequest{inst("a")}, quota, now)
	if err != nil {
		t.Fatal(err)
	}
	eps := []api.Endpoint{{Address: "10.64.1.5", Port: 8080, Ready: true, Serving: true},
		{Address: "10.64.2.7", Port: 8081, Serving: true, Terminating: true}}
	req := lbReq("ep")
	req.Targets = api.TargetsEndpoints
	req.Listeners = []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, Endpoints: eps}}
	lb, err := s.CreateLB(req, quota, now, now, "")
	if err != nil {
		t.Fatal(err)
	}
	req.Listeners[0].Endpoints[0].Port = 1 // the caller's slice is not the record's
	if got := lb.Listeners[0].Endpoints; got[0].Port != 8080 {
		t.Fatalf("record shares the request's endpoints: %+v", got)
	}
	vip := lb.VIP

	nodes := api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: 30080}}, Backends: []string{insts[0].ID}}
	moved, err := s.UpdateLB(lb.ID, nodes, now, "")
	if err != nil || moved.VIP != vip || moved.EndpointTargets() || len(moved.Listeners[0].Endpoints) != 0 {
		t.Fatalf("to node targets: %+v, %v; want VIP %s kept", moved, err, vip)
	}
	back := api.LoadBalancerSpec{Targets: api.TargetsEndpoints, Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80,
		Endpoints: []api.Endpoint{{Address: "10.64.1.5", Port: 8080, Ready: true, Serving: true},
			{Address: "10.64.2.7", Port: 8081, Serving: true, Terminating: true}}}}}
	moved, err = s.UpdateLB(lb.ID, back, now, "")
	if err != nil || moved.VIP != vip || !moved.EndpointTargets() {
		t.Fatalf("back to endpoint targets: %+v, %v; want VIP %s kept", moved, err, vip)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, DefaultPools())
	got, err := s.GetLB(lb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Listeners, moved.Listeners) || got.Targets != api.TargetsEndpoints || got.VIP != vip {
		t.Fatalf("after a restart: %+v, want %+v", got.LoadBalancerSpec, moved.LoadBalancerSpec)
	}
}
