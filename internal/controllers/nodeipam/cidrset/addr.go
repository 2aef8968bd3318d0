package cidrset

import (
	"encoding/binary"
	"net/netip"
)

// u128 holds an address as an unsigned integer, so the sub-CIDR index can
// be read and written with shifts. IPv4 addresses sit in the low 32 bits of
// lo. Two words rather than math/big keep the hot path allocation-free.
type u128 struct{ hi, lo uint64 }

func fromAddr(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return u128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

func (u u128) addr(is4 bool) netip.Addr {
	if is4 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(u.lo))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], u.hi)
	binary.BigEndian.PutUint64(b[8:], u.lo)
	return netip.AddrFrom16(b)
}

// shr and shl rely on Go defining a shift by >= the operand width as 0,
// which covers n == 0 (x<<64) and n >= 128 without extra branches.
func (u u128) shr(n uint) u128 {
	if n >= 64 {
		return u128{lo: u.hi >> (n - 64)}
	}
	return u128{hi: u.hi >> n, lo: u.lo>>n | u.hi<<(64-n)}
}

func (u u128) shl(n uint) u128 {
	if n >= 64 {
		return u128{hi: u.lo << (n - 64)}
	}
	return u128{hi: u.hi<<n | u.lo>>(64-n), lo: u.lo << n}
}

func (u u128) or(v u128) u128 { return u128{hi: u.hi | v.hi, lo: u.lo | v.lo} }
