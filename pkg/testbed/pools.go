package testbed

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
)

// poolClaimPort is the port a test binds on the last address of a loopback
// /24 to claim it. localcloud never hands out a prefix's last address, so
// the claim cannot collide with a load balancer or an instance.
const poolClaimPort = 64999

// LoopbackPool returns a loopback /24 that no other test on this machine
// holds while t runs. Test binaries run in parallel (go test runs packages
// as separate processes), and two of them forwarding on the same VIP:port
// fail each other, so a random pick is not enough: the pool is claimed
// with a listener on its last address, which the kernel makes exclusive
// across processes, and released when t ends. second selects the range:
// different ranges for different kinds of pool (VIPs, instance addresses).
func LoopbackPool(t testing.TB, second byte) netip.Prefix {
	t.Helper()
	for range 200 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{127, second, byte(rand.IntN(256)), 0}), 24)
		last := netip.AddrFrom4([4]byte{127, second, p.Addr().As4()[2], 255})
		ln, err := net.Listen("tcp", netip.AddrPortFrom(last, poolClaimPort).String())
		if err != nil {
			continue
		}
		t.Cleanup(func() { _ = ln.Close() })
		return p
	}
	t.Fatal(fmt.Errorf("testbed: no free loopback /24 in 127.%d.0.0/16", second))
	return netip.Prefix{}
}

// VIPPool is LoopbackPool in the range the tests use for load balancer
// VIPs, 127.160.0.0/16 (the sandbox's default is 127.0.100.0/24).
func VIPPool(t testing.TB) netip.Prefix { return LoopbackPool(t, 160) }

// InstancePool is LoopbackPool in the range the tests use for instances'
// internal addresses, 127.161.0.0/16, where test backends listen.
func InstancePool(t testing.TB) netip.Prefix { return LoopbackPool(t, 161) }
