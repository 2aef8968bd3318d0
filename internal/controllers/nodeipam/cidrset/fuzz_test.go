package cidrset

import (
	"errors"
	"math/big"
	"net/netip"
	"sync"
	"testing"
)

// fuzzConfigs are small sets, so that random operations reach exhaustion,
// bitmap word boundaries and the wraparound of the candidate index often.
var fuzzConfigs = []struct {
	cluster string
	mask    int
}{
	{"10.0.0.0/24", 28},        // 16, one partial word
	{"10.0.0.0/22", 26},        // 16, odd masks
	{"10.244.0.0/16", 24},      // 256, four words
	{"10.0.0.0/21", 30},        // 512
	{"10.0.0.0/30", 32},        // 4 single addresses
	{"fd00::/120", 124},        // 16
	{"fd00:0:0:ab00::/56", 64}, // 256, index in the high 64 bits
	{"fd00::/60", 68},          // 256, index straddles the two 64-bit halves
	{"fd00::1/128", 128},       // 1
}

// model is the reference the fuzz test compares CIDRSet against. It is
// deliberately naive: sub-CIDRs are computed with math/big and an
// operation's reach with netip.Prefix.Overlaps against every sub-CIDR, so it
// shares none of the bit arithmetic it checks.
type model struct {
	cluster  netip.Prefix
	subs     []netip.Prefix
	used     []bool
	reserved []bool
	next     int
	allocs   map[netip.Prefix]bool // outstanding AllocateNext results
}

func newModel(cluster netip.Prefix, mask int) *model {
	subs := fuzzSubs(cluster, mask)
	return &model{cluster: cluster, subs: subs, used: make([]bool, len(subs)), reserved: make([]bool, len(subs)), allocs: map[netip.Prefix]bool{}}
}

type fuzzSubsKey struct {
	cluster netip.Prefix
	mask    int
}

// fuzzSubsCache keeps the enumerated sub-CIDRs of each configuration, which
// are read-only, so that every execution does not redo the math/big work.
var fuzzSubsCache sync.Map // fuzzSubsKey -> []netip.Prefix

// fuzzSubs lists the sub-CIDRs of cluster in index order.
func fuzzSubs(cluster netip.Prefix, mask int) []netip.Prefix {
	key := fuzzSubsKey{cluster, mask}
	if v, ok := fuzzSubsCache.Load(key); ok {
		return v.([]netip.Prefix)
	}
	addrBits := cluster.Addr().BitLen()
	base := new(big.Int).SetBytes(cluster.Addr().AsSlice())
	subs := make([]netip.Prefix, 1<<(mask-cluster.Bits()))
	for k := range subs {
		x := new(big.Int).Lsh(big.NewInt(int64(k)), uint(addrBits-mask))
		x.Add(x, base)
		a, _ := netip.AddrFromSlice(x.FillBytes(make([]byte, addrBits/8)))
		subs[k] = netip.PrefixFrom(a, mask)
	}
	fuzzSubsCache.Store(key, subs)
	return subs
}

func (m *model) overlapping(p netip.Prefix) []int {
	var ks []int
	for k, s := range m.subs {
		if s.Overlaps(p) {
			ks = append(ks, k)
		}
	}
	return ks
}

func (m *model) contained(p netip.Prefix) bool {
	return p.Bits() >= m.cluster.Bits() && m.cluster.Overlaps(p)
}

func (m *model) unavailable() int {
	n := 0
	for k := range m.subs {
		if m.used[k] || m.reserved[k] {
			n++
		}
	}
	return n
}

// byteReader hands out fuzz input one byte at a time, zeros when exhausted.
type byteReader []byte

func (r *byteReader) next() byte {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return b
}

// prefix builds a prefix near the cluster CIDR: mostly inside it, of every
// length from wider than the cluster to narrower than a sub-CIDR, and
// sometimes outside it or of the other family.
func (r *byteReader) prefix(m *model, mask int) netip.Prefix {
	lenB, hi, lo := r.next(), r.next(), r.next()
	addrBits := m.cluster.Addr().BitLen()
	if lenB == 0xff {
		if addrBits == 32 {
			return netip.MustParsePrefix("fd00::/64")
		}
		return netip.MustParsePrefix("10.0.0.0/24")
	}
	bits := m.cluster.Bits() - 2 + int(lenB)%(mask-m.cluster.Bits()+5)
	bits = max(0, min(bits, addrBits))
	off := int(hi)<<8 | int(lo)
	off %= len(m.subs) + len(m.subs)/4 + 1 // about one in five lands outside
	v := new(big.Int).Lsh(big.NewInt(int64(off)), uint(addrBits-mask))
	v.Add(v, new(big.Int).SetBytes(m.cluster.Addr().AsSlice()))
	// Stray host bits, which Masked drops for short prefixes.
	v.Add(v, big.NewInt(int64(lenB)))
	// Two spare bytes keep FillBytes from panicking on a carry out of the
	// top of the address space; dropping them wraps around to its bottom.
	buf := v.FillBytes(make([]byte, addrBits/8+2))[2:]
	a, _ := netip.AddrFromSlice(buf)
	return netip.PrefixFrom(a, bits).Masked()
}

// FuzzNoOverlap runs random sequences of AllocateNext, Occupy, Release and
// Reserve against the model and checks that no two outstanding allocations
// overlap, that AllocateNext returns exactly the first free sub-CIDR at or
// after the rotating index (so never anything used or reserved), that
// errors match, and that Used and InUse agree with the model.
//
// Input decoding: one op byte, then up to three argument bytes. op%8 is
// 4 Occupy, 5 Release, 6 release an outstanding allocation, 7 Reserve (only
// when op < 32); otherwise it allocates 1<<(op>>5) times, so that a few
// bytes can exhaust or wrap a 512-entry set.
func FuzzNoOverlap(f *testing.F) {
	// 16 sub-CIDRs: allocate them all, hit exhaustion, release two
	// allocations, and get them back in address order after the wrap.
	f.Add(uint8(0), []byte{0x80, 0, 6, 3, 6, 9, 0, 0, 0})
	// 10.244.0.0/16 into /24s: occupy a /22 and a /26, reserve a /24,
	// allocate 128, release a /20, allocate 8, occupy outside, release one.
	f.Add(uint8(2), []byte{4, 8, 0, 4, 4, 12, 0, 9, 7, 10, 0, 32, 0xe0, 5, 6, 0, 5, 0x60, 4, 10, 1, 0x30, 6, 77})
	// fd00::/60 into /68s, where the index straddles the 64-bit halves:
	// other-family occupy, allocate, release, reserve, exhaust, release.
	f.Add(uint8(7), []byte{4, 0xff, 0, 0, 0xa0, 5, 3, 0, 17, 7, 6, 0, 200, 0xe0, 0xe0, 6, 1})

	f.Fuzz(func(t *testing.T, cfg uint8, ops []byte) {
		// Go's minimizer is quadratic in the input length, so a long input
		// would stall the fuzzer for a minute each time it is found
		// interesting; the allocation bursts make 256 bytes plenty.
		if len(ops) > 256 {
			ops = ops[:256]
		}
		c := fuzzConfigs[int(cfg)%len(fuzzConfigs)]
		s, err := New(netip.MustParsePrefix(c.cluster), c.mask)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(s.ClusterCIDR(), c.mask)
		r := byteReader(ops)
		for step := 0; len(r) > 0; step++ {
			switch op := r.next(); op % 8 {
			case 4:
				fuzzOccupy(t, s, m, r.prefix(m, c.mask))
			case 5:
				fuzzRelease(t, s, m, r.prefix(m, c.mask))
			case 6:
				// Release an outstanding allocation, as deleting a Node does.
				if len(m.allocs) > 0 {
					k := int(r.next()) % len(m.subs)
					for !m.allocs[m.subs[k]] {
						k = (k + 1) % len(m.subs)
					}
					fuzzRelease(t, s, m, m.subs[k])
				}
			case 7:
				// Reservations only grow, so keep them rare.
				if op < 32 {
					fuzzReserve(t, s, m, r.prefix(m, c.mask))
				}
			default:
				for range 1 << (op >> 5) {
					fuzzAllocate(t, s, m)
				}
			}
			fuzzCheckCounts(t, s, m, step)
		}
	})
}

func fuzzAllocate(t *testing.T, s *CIDRSet, m *model) {
	t.Helper()
	p, err := s.AllocateNext()
	want := -1
	for i := range m.subs {
		if k := (m.next + i) % len(m.subs); !m.used[k] && !m.reserved[k] {
			want = k
			break
		}
	}
	if want < 0 {
		if !errors.Is(err, ErrCIDRRangeNoCIDRsRemaining) {
			t.Fatalf("AllocateNext on a full set = %s, %v; want ErrCIDRRangeNoCIDRsRemaining", p, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("AllocateNext with %d of %d unavailable: %v", m.unavailable(), len(m.subs), err)
	}
	if p != m.subs[want] {
		t.Fatalf("AllocateNext() = %s, want %s (first free at or after index %d)", p, m.subs[want], m.next)
	}
	for a := range m.allocs {
		if a.Overlaps(p) {
			t.Fatalf("AllocateNext() = %s overlaps outstanding allocation %s", p, a)
		}
	}
	m.used[want] = true
	m.next = (want + 1) % len(m.subs)
	m.allocs[p] = true
}

func fuzzOccupy(t *testing.T, s *CIDRSet, m *model, p netip.Prefix) {
	t.Helper()
	err := s.Occupy(p)
	if !m.contained(p) {
		if !errors.Is(err, ErrOutsideClusterCIDR) {
			t.Fatalf("Occupy(%s) outside %s = %v, want ErrOutsideClusterCIDR", p, m.cluster, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Occupy(%s): %v", p, err)
	}
	for _, k := range m.overlapping(p) {
		m.used[k] = true
	}
}

func fuzzRelease(t *testing.T, s *CIDRSet, m *model, p netip.Prefix) {
	t.Helper()
	err := s.Release(p)
	if !m.contained(p) {
		if !errors.Is(err, ErrOutsideClusterCIDR) {
			t.Fatalf("Release(%s) outside %s = %v, want ErrOutsideClusterCIDR", p, m.cluster, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Release(%s): %v", p, err)
	}
	for _, k := range m.overlapping(p) {
		m.used[k] = false
		delete(m.allocs, m.subs[k])
	}
}

func fuzzReserve(t *testing.T, s *CIDRSet, m *model, p netip.Prefix) {
	t.Helper()
	n, err := s.Reserve(p)
	ks := m.overlapping(p)
	if err != nil || n != len(ks) {
		t.Fatalf("Reserve(%s) = %d, %v; want %d, nil", p, n, err, len(ks))
	}
	for _, k := range ks {
		m.reserved[k] = true
	}
}

func fuzzCheckCounts(t *testing.T, s *CIDRSet, m *model, step int) {
	t.Helper()
	if got, want := s.Used(), m.unavailable(); got != want {
		t.Fatalf("step %d: Used() = %d, model has %d", step, got, want)
	}
	for k, sub := range m.subs {
		if got, want := s.InUse(sub), m.used[k] || m.reserved[k]; got != want {
			t.Fatalf("step %d: InUse(%s) = %v, model says %v", step, sub, got, want)
		}
	}
}
