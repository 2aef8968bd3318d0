package dataplane

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// TestEndpointSelection: per listener and family, new flows go to the
// healthy ready endpoints, else to the healthy serving ones; a UDP
// endpoint follows the TCP endpoints of its address; flows are kept to
// every healthy endpoint that is ready or serving.
func TestEndpointSelection(t *testing.T) {
	t.Parallel()
	ep := func(addr string, port int, ready, serving bool) api.Endpoint {
		return api.Endpoint{Address: addr, Port: port, Ready: ready, Serving: serving, Terminating: !ready}
	}
	spec := Spec{ID: "lb-sel", EndpointTargets: true, Listeners: []api.Listener{
		{Protocol: api.ProtocolTCP, Port: 80, Endpoints: []api.Endpoint{
			ep("10.64.1.5", 8080, true, true), ep("10.64.1.6", 8080, false, true), ep("10.64.1.7", 8080, false, false),
			ep("fd00::5", 8080, false, true)}},
		{Protocol: api.ProtocolUDP, Port: 53, Endpoints: []api.Endpoint{ep("10.64.1.5", 53, true, true), ep("10.64.1.9", 53, true, true)}},
	}}
	lb := &loadBalancer{spec: spec, hstate: map[string]*healthState{}}
	lb.syncHealthStateLocked()
	if _, probed := lb.hstate["10.64.1.7:8080"]; probed {
		t.Error("an endpoint neither ready nor serving is probed")
	}
	ids := func(ts []target) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.id)
		}
		return out
	}
	check := func(what string, lf listenerFamily, want ...string) {
		t.Helper()
		s := &snapshot{}
		lb.endpointTargetsLocked(s)
		if got := ids(s.targets(lf)); !slices.Equal(got, want) {
			t.Errorf("%s: targets %v, want %v", what, got, want)
		}
	}
	tcp4, tcp6, udp4 := listenerFamily{api.ProtocolTCP, 80, false}, listenerFamily{api.ProtocolTCP, 80, true}, listenerFamily{api.ProtocolUDP, 53, false}
	check("ready first", tcp4, "10.64.1.5:8080")
	check("the IPv6 VIP's", tcp6, "[fd00::5]:8080")
	check("UDP, unprobed addresses healthy", udp4, "10.64.1.5:53", "10.64.1.9:53")

	lb.hstate["10.64.1.5:8080"].healthy = false
	check("no ready one healthy: the serving ones", tcp4, "10.64.1.6:8080")
	check("UDP follows its address' TCP endpoints", udp4, "10.64.1.9:53")
	s := &snapshot{}
	lb.endpointTargetsLocked(s)
	if got, want := ids(s.all()), []string{"10.64.1.6:8080", "[fd00::5]:8080", "10.64.1.9:53"}; !slices.Equal(got, want) {
		t.Errorf("flows kept to %v, want %v", got, want)
	}
	if h := lb.health(); h["10.64.1.5:8080"] || !h["10.64.1.6:8080"] || h["10.64.1.5:53"] || !h["10.64.1.9:53"] {
		t.Errorf("health %v", h)
	}
	if got := (target{addr: netip.MustParseAddr("fd00::5"), port: 1}).familyAddr(false); got.IsValid() {
		t.Errorf("an IPv6 endpoint has an IPv4 address %s", got)
	}
}
