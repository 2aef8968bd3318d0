package testbed_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// A claimed pool cannot be claimed again, by this process or another,
// until the test that holds it ends.
func TestLoopbackPoolIsExclusive(t *testing.T) {
	seen := map[netip.Prefix]bool{}
	for range 20 {
		p := testbed.VIPPool(t)
		if seen[p] {
			t.Fatalf("%s handed out twice", p)
		}
		seen[p] = true
		last := p.Addr().As4()
		last[3] = 255
		if ln, err := net.Listen("tcp", netip.AddrPortFrom(netip.AddrFrom4(last), 64999).String()); err == nil {
			_ = ln.Close()
			t.Fatalf("%s is not held", p)
		}
	}
	if p := testbed.InstancePool(t); p.Addr().As4()[1] != 161 || p.Bits() != 24 {
		t.Fatalf("instance pool %s", p)
	}
}
