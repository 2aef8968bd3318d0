package api

import (
	"errors"
	"strings"
	"testing"
)

// TestEndpointTargetsValidation: a load balancer whose targets are
// endpoints carries them per listener, needs no node port and no
// backends; each refusal names the field and the value.
func TestEndpointTargetsValidation(t *testing.T) {
	t.Parallel()
	ep := func(addr string, port int) Endpoint {
		return Endpoint{Address: addr, Port: port, Ready: true, Serving: true}
	}
	good := func() LoadBalancerSpec {
		return LoadBalancerSpec{Targets: TargetsEndpoints, IPFamilies: []IPFamily{IPv4, IPv6}, Listeners: []Listener{
			{Protocol: ProtocolTCP, Port: 80, Endpoints: []Endpoint{ep("10.64.1.5", 8080), ep("fd00:5354:fe::5", 8080)}},
			{Protocol: ProtocolUDP, Port: 53, NodePort: 30053},
		}}
	}
	s := good()
	if err := s.Validate(); err != nil {
		t.Fatalf("valid endpoint spec refused: %v", err)
	}
	for name, tc := range map[string]struct {
		change      func(*LoadBalancerSpec)
		field, want string
	}{
		"bad address": {func(s *LoadBalancerSpec) { s.Listeners[0].Endpoints[1].Address = "10.64.1" },
			"listeners[0].endpoints[1].address", `"10.64.1"`},
		"multicast address": {func(s *LoadBalancerSpec) { s.Listeners[0].Endpoints[0].Address = "224.0.0.1" },
			"listeners[0].endpoints[0].address", `"224.0.0.1"`},
		"family without VIP": {func(s *LoadBalancerSpec) { s.IPFamilies = []IPFamily{IPv4} },
			"listeners[0].endpoints[1].address", "fd00:5354:fe::5 is an IPv6 address"},
		"bad port": {func(s *LoadBalancerSpec) { s.Listeners[0].Endpoints[0].Port = 0 },
			"listeners[0].endpoints[0].port", "0 is not a port"},
		"port too big": {func(s *LoadBalancerSpec) { s.Listeners[0].Endpoints[0].Port = 70000 },
			"listeners[0].endpoints[0].port", "70000"},
		"repeated": {func(s *LoadBalancerSpec) { s.Listeners[0].Endpoints[1] = s.Listeners[0].Endpoints[0] },
			"listeners[0].endpoints[1]", "10.64.1.5:8080 repeats"},
		"backends too": {func(s *LoadBalancerSpec) { s.Backends = []string{"i-0123456789abcdef"} },
			"backends", "1 backends on a load balancer whose targets are endpoints"},
		"endpoints without targets": {func(s *LoadBalancerSpec) { s.Targets = ""; s.Listeners[0].NodePort = 30080 },
			"listeners[0].endpoints", "set targets: endpoints"},
		"node port 0 without endpoints": {func(s *LoadBalancerSpec) { s.Targets = TargetsInstances; s.Listeners[0].Endpoints = nil },
			"listeners[0].nodePort", "0 is not a port"},
		"bad targets": {func(s *LoadBalancerSpec) { s.Targets = "pods" },
			"targets", `"pods"`},
		"health check port": {func(s *LoadBalancerSpec) { s.HealthCheck.Port = 31000 },
			"healthCheck.port", "31000"},
		"too many": {func(s *LoadBalancerSpec) {
			for i := range MaxEndpoints {
				s.Listeners[1].Endpoints = append(s.Listeners[1].Endpoints, ep("10.64.0.1", 1+i))
			}
		}, "listeners[1].endpoints", "at most 5000 endpoints"},
	} {
		s := good()
		tc.change(&s)
		err := s.Validate()
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.Code != CodeInvalidArgument || apiErr.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want invalid %s naming %q", name, err, tc.field, tc.want)
		}
	}
}

func TestEndpointAddrPort(t *testing.T) {
	t.Parallel()
	for e, want := range map[Endpoint]string{{Address: "10.0.0.1", Port: 80}: "10.0.0.1:80", {Address: "fd00::1", Port: 443}: "[fd00::1]:443"} {
		if got := e.AddrPort(); got != want {
			t.Errorf("%+v: got %s, want %s", e, got, want)
		}
	}
}
