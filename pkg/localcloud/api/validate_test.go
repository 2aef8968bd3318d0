package api

import (
	"errors"
	"strings"
	"testing"
)

func TestHealthCheckPath(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "/healthz", "/livez?verbose=1"} {
		if err := (HealthCheck{Path: ok}).validate(); err != nil {
			t.Errorf("path %q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"healthz", "/a b", "/\x00", "/é", "/" + strings.Repeat("x", 256)} {
		err := (HealthCheck{Path: bad}).validate()
		var apiErr *Error
		if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "healthCheck.path") {
			t.Errorf("path %q: err = %v, want an invalid healthCheck.path error", bad, err)
		}
	}
}

// TestSourceRangesNeedTheVIPFamily: a load balancer's VIP is IPv4, so a
// list of source ranges without an IPv4 range ("::/0" meant as everyone)
// would admit no client: create and update refuse it, naming the field
// and the list. A list with one IPv4 range is accepted whole (its IPv6
// ranges match no client), as is an empty one (every source).
func TestSourceRangesNeedTheVIPFamily(t *testing.T) {
	t.Parallel()
	spec := func(ranges ...string) LoadBalancerSpec {
		return LoadBalancerSpec{Listeners: []Listener{{Protocol: ProtocolTCP, Port: 80, NodePort: 30080}}, SourceRanges: ranges}
	}
	for _, ok := range [][]string{nil, {"0.0.0.0/0"}, {"::/0", "10.0.0.0/8"}, {"fd00::/8", "192.168.0.0/16", "::/0"}} {
		s := spec(ok...)
		if err := s.Validate(); err != nil {
			t.Errorf("sourceRanges %q refused: %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"::/0"}, {"fd00::/8", "2001:db8::/32"}, {"::ffff:10.0.0.0/104"}} {
		create := CreateLoadBalancerRequest{Name: "lb", Cluster: "c", LoadBalancerSpec: spec(bad...)}
		update := UpdateLoadBalancerRequest{LoadBalancerSpec: spec(bad...)}
		for what, err := range map[string]error{"create": create.Validate(), "update": update.Validate()} {
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.Code != CodeInvalidArgument || apiErr.Field != "sourceRanges" {
				t.Fatalf("%s with sourceRanges %q: err = %v, want invalid sourceRanges", what, bad, err)
			}
			for _, want := range append([]string{"sourceRanges", "no IPv4 range", "VIP is IPv4"}, bad...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %q does not name %q", what, err, want)
				}
			}
		}
	}
	// A malformed range is still reported by its index first.
	s := spec("::/0", "10.0.0.1/8")
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "sourceRanges[1]") {
		t.Errorf("host bits: err = %v, want sourceRanges[1]", err)
	}
}

// TestProxyProtocolVersions: v1, v2 or none; anything else is refused
// naming the field and the value.
func TestProxyProtocolVersions(t *testing.T) {
	t.Parallel()
	spec := func(v ProxyProtocol) LoadBalancerSpec {
		return LoadBalancerSpec{Listeners: []Listener{{Protocol: ProtocolTCP, Port: 80, NodePort: 30080}}, ProxyProtocol: v}
	}
	for _, ok := range []ProxyProtocol{"", ProxyProtocolV1, ProxyProtocolV2} {
		s := spec(ok)
		if err := s.Validate(); err != nil {
			t.Errorf("proxyProtocol %q refused: %v", ok, err)
		}
	}
	s := spec("v3")
	var apiErr *Error
	if err := s.Validate(); !errors.As(err, &apiErr) || apiErr.Field != "proxyProtocol" || !strings.Contains(err.Error(), `"v3"`) {
		t.Errorf("proxyProtocol v3: err = %v, want invalid proxyProtocol naming v3", err)
	}
}
