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
			for _, want := range append([]string{"sourceRanges", "no range of the load balancer's families [IPv4]"}, bad...) {
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

// TestIPFamilies: IPv4 and/or IPv6, each once; a requested VIP of a
// family the load balancer does not have, or of the wrong family, is
// refused naming the field; an IPv6 load balancer's source ranges need an
// IPv6 range.
func TestIPFamilies(t *testing.T) {
	t.Parallel()
	spec := func(fams ...IPFamily) LoadBalancerSpec {
		return LoadBalancerSpec{Listeners: []Listener{{Protocol: ProtocolTCP, Port: 80, NodePort: 30080}}, IPFamilies: fams}
	}
	for _, ok := range []CreateLoadBalancerRequest{
		{LoadBalancerSpec: spec()},
		{LoadBalancerSpec: spec(IPv6)},
		{LoadBalancerSpec: spec(IPv6, IPv4), VIP: "10.0.0.5", VIP6: "fd00::5"},
		{LoadBalancerSpec: LoadBalancerSpec{Listeners: spec().Listeners, IPFamilies: []IPFamily{IPv6}, SourceRanges: []string{"::/0"}}},
	} {
		ok.Name, ok.Cluster = "lb", "c"
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v refused: %v", ok, err)
		}
	}
	for name, c := range map[string]struct {
		req        CreateLoadBalancerRequest
		field, say string
	}{
		"unknown family":   {CreateLoadBalancerRequest{LoadBalancerSpec: spec("ipv6")}, "ipFamilies[0]", `"ipv6": want IPv4 or IPv6`},
		"family twice":     {CreateLoadBalancerRequest{LoadBalancerSpec: spec(IPv4, IPv4)}, "ipFamilies", "lists IPv4 twice"},
		"vip6 on IPv4":     {CreateLoadBalancerRequest{LoadBalancerSpec: spec(), VIP6: "fd00::5"}, "vip6", "ipFamilies [IPv4] has no IPv6"},
		"vip on IPv6":      {CreateLoadBalancerRequest{LoadBalancerSpec: spec(IPv6), VIP: "10.0.0.5"}, "vip", "has no IPv4"},
		"vip6 is IPv4":     {CreateLoadBalancerRequest{LoadBalancerSpec: spec(IPv6), VIP6: "10.0.0.5"}, "vip6", `"10.0.0.5" is not an IPv6 address`},
		"vip6 mapped":      {CreateLoadBalancerRequest{LoadBalancerSpec: spec(IPv6), VIP6: "::ffff:10.0.0.5"}, "vip6", "not IPv4-mapped"},
		"vip6 zoned":       {CreateLoadBalancerRequest{LoadBalancerSpec: spec(IPv6), VIP6: "fe80::1%eth0"}, "vip6", "without zone"},
		"IPv4 ranges only": {CreateLoadBalancerRequest{LoadBalancerSpec: LoadBalancerSpec{Listeners: spec().Listeners, IPFamilies: []IPFamily{IPv6}, SourceRanges: []string{"10.0.0.0/8"}}}, "sourceRanges", "families [IPv6]"},
	} {
		c.req.Name, c.req.Cluster = "lb", "c"
		err := c.req.Validate()
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.Code != CodeInvalidArgument || apiErr.Field != c.field || !strings.Contains(err.Error(), c.say) {
			t.Errorf("%s: err = %v, want invalid %s saying %q", name, err, c.field, c.say)
		}
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
