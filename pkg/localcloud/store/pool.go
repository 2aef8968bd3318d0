package store

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// Pools are the address ranges the cloud allocates from.
type Pools struct {
	Internal netip.Prefix
	External netip.Prefix
	VIP      netip.Prefix
	// VIP6 is the IPv6 VIP pool; unset, the cloud has no IPv6 VIPs and
	// refuses a load balancer that asks for one.
	VIP6 netip.Prefix
}

// DefaultPools returns the default pools: internal addresses in
// 127.1.0.0/16 give each fake node its own loopback address a test can bind
// to; VIPs live in 127.0.100.0/24.
func DefaultPools() Pools {
	return Pools{
		Internal: netip.MustParsePrefix("127.1.0.0/16"),
		External: netip.MustParsePrefix("127.2.0.0/16"),
		VIP:      netip.MustParsePrefix("127.0.100.0/24"),
	}
}

// allocator hands out addresses of a prefix, skipping the network address
// and the last address, with a moving cursor so that sequential allocation
// stays cheap even when thousands are in use.
type allocator struct {
	prefix netip.Prefix
	used   map[netip.Addr]bool
	cursor netip.Addr
}

func newAllocator(p netip.Prefix) *allocator {
	return &allocator{prefix: p.Masked(), used: map[netip.Addr]bool{}, cursor: p.Masked().Addr()}
}

var errPoolExhausted = errors.New("address pool exhausted")

func (a *allocator) size() int {
	bits := a.prefix.Addr().BitLen() - a.prefix.Bits()
	if bits >= 30 {
		return 1 << 30
	}
	return 1 << bits
}

// next returns a free address without marking it used, so that a failed
// commit leaves nothing to undo.
func (a *allocator) next(skip map[netip.Addr]bool) (netip.Addr, error) {
	c := a.cursor
	for range a.size() {
		c = c.Next()
		if !c.IsValid() || !a.prefix.Contains(c) {
			c = a.prefix.Addr().Next()
		}
		last := !a.prefix.Contains(c.Next())
		if last || c == a.prefix.Addr() || a.used[c] || skip[c] {
			continue
		}
		return c, nil
	}
	return netip.Addr{}, fmt.Errorf("%s: %w", a.prefix, errPoolExhausted)
}

// usable tells whether addr is an address next may hand out: inside the
// prefix, neither its first nor its last address.
func (a *allocator) usable(addr netip.Addr) bool {
	return a.prefix.Contains(addr) && addr != a.prefix.Addr() && a.prefix.Contains(addr.Next())
}

func (a *allocator) use(s string) {
	if addr, err := netip.ParseAddr(s); err == nil {
		a.used[addr] = true
		a.cursor = addr
	}
}

func (a *allocator) release(s string) {
	if addr, err := netip.ParseAddr(s); err == nil {
		delete(a.used, addr)
	}
}

// poolErr turns an exhausted pool into the API's quota error naming it.
func poolErr(err error, pool string) error {
	if errors.Is(err, errPoolExhausted) {
		return &api.Error{Code: api.CodeQuotaExceeded, Field: pool + "Addresses",
			Message: fmt.Sprintf("no free %s address: %v", pool, err)}
	}
	return err
}
