package store

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// dualPools adds an IPv6 VIP pool of two usable addresses to smallPools.
func dualPools() Pools {
	p := smallPools()
	p.VIP6 = netip.MustParsePrefix("fd00:5354:0:7::/126")
	return p
}

func withFamilies(r api.CreateLoadBalancerRequest, fams ...api.IPFamily) api.CreateLoadBalancerRequest {
	r.IPFamilies = fams
	return r
}

// TestLoadBalancerFamilies: a load balancer has a VIP per family it asks
// for; an update that adds a family gives it a VIP and keeps the other,
// one that removes a family frees its VIP for the next load balancer; the
// addresses survive a restart; without an IPv6 pool an IPv6 load balancer
// is refused naming ipFamilies.
func TestLoadBalancerFamilies(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, dualPools())
	dual := mustLB(t, s, withFamilies(lbReq("dual"), api.IPv4, api.IPv6))
	if dual.VIP == "" || dual.VIP6 != "fd00:5354:0:7::1" {
		t.Fatalf("dual-stack load balancer got VIP %q and VIP6 %q", dual.VIP, dual.VIP6)
	}
	v6 := mustLB(t, s, withFamilies(lbReq("v6only"), api.IPv6))
	if v6.VIP != "" || v6.VIP6 != "fd00:5354:0:7::2" {
		t.Fatalf("IPv6-only load balancer got VIP %q and VIP6 %q", v6.VIP, v6.VIP6)
	}
	_, err := s.CreateLB(withFamilies(lbReq("full"), api.IPv6), quota, now, now, "")
	wantCode(t, err, api.CodeQuotaExceeded, "vip6Addresses")

	// Drop IPv6 from the dual-stack one: its IPv4 VIP stays, its IPv6
	// VIP goes to the next load balancer that asks.
	spec := dual.LoadBalancerSpec
	spec.IPFamilies = []api.IPFamily{api.IPv4}
	got, err := s.UpdateLB(dual.ID, spec, now, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.VIP != dual.VIP || got.VIP6 != "" {
		t.Fatalf("after dropping IPv6: VIP %q (was %q), VIP6 %q", got.VIP, dual.VIP, got.VIP6)
	}
	next := mustLB(t, s, withFamilies(lbReq("next"), api.IPv6))
	if next.VIP6 != dual.VIP6 {
		t.Errorf("the freed IPv6 VIP %s was not reused: got %s", dual.VIP6, next.VIP6)
	}
	// Add IPv4 to the IPv6-only one: its IPv6 VIP stays.
	spec = v6.LoadBalancerSpec
	spec.IPFamilies = []api.IPFamily{api.IPv6, api.IPv4}
	got, err = s.UpdateLB(v6.ID, spec, now, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.VIP == "" || got.VIP == dual.VIP || got.VIP6 != v6.VIP6 {
		t.Fatalf("after adding IPv4: VIP %q, VIP6 %q (was %q)", got.VIP, got.VIP6, v6.VIP6)
	}
	// The IPv4 pool is now used up; an update that needs one more fails
	// and changes nothing.
	spec = next.LoadBalancerSpec
	spec.IPFamilies = []api.IPFamily{api.IPv4, api.IPv6}
	_, err = s.UpdateLB(next.ID, spec, now, "")
	wantCode(t, err, api.CodeQuotaExceeded, "vipAddresses")
	if again, _ := s.GetLB(next.ID); again.VIP != "" || len(again.IPFamilies) != 1 {
		t.Errorf("a refused update changed the load balancer: %+v", again)
	}

	// A restart keeps every address in use.
	_ = s.Close()
	s = open(t, dir, dualPools())
	_, err = s.CreateLB(withFamilies(lbReq("after"), api.IPv6), quota, now, now, "")
	wantCode(t, err, api.CodeQuotaExceeded, "vip6Addresses")

	plain := open(t, t.TempDir(), smallPools())
	_, err = plain.CreateLB(withFamilies(lbReq("v6"), api.IPv6), quota, now, now.Add(time.Second), "")
	wantCode(t, err, api.CodeInvalidArgument, "ipFamilies")
}
