package cidrset

import (
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"sync"
)

// MaxSubnetBits is the largest supported difference between the sub-CIDR
// mask size and the cluster CIDR's prefix length. Upstream's node IPAM uses
// the same bound; it caps a set at 65,536 sub-CIDRs (an 8 KiB bitmap per
// state) and rejects flag values such as an IPv6 /48 split into /112s that
// would otherwise ask for billions of entries.
const MaxSubnetBits = 16

var (
	// ErrCIDRRangeNoCIDRsRemaining is returned, wrapped, by AllocateNext when
	// every sub-CIDR is used or reserved.
	ErrCIDRRangeNoCIDRsRemaining = errors.New("no sub-CIDRs remaining")
	// ErrOutsideClusterCIDR is returned, wrapped, by Occupy and Release for
	// a CIDR that is not contained in the cluster CIDR, including one of the
	// other IP family.
	ErrOutsideClusterCIDR = errors.New("outside the cluster CIDR")
	// ErrInvalidCIDR is returned, wrapped, for the zero netip.Prefix or one
	// with an out-of-range prefix length.
	ErrInvalidCIDR = errors.New("invalid CIDR")
	// ErrInvalidMaskSize is returned, wrapped, by New when the sub-CIDR mask
	// size cannot split the cluster CIDR.
	ErrInvalidMaskSize = errors.New("invalid sub-CIDR mask size")
)

// CIDRSet allocates fixed-size sub-CIDRs from one cluster CIDR. The zero
// value is not usable; call New. See the package documentation for the
// states a sub-CIDR can be in and for concurrency.
type CIDRSet struct {
	// Immutable after New.
	cluster netip.Prefix
	is4     bool
	subBits int  // prefix length of every sub-CIDR
	shift   uint // address bits below the sub-CIDR index
	size    int  // number of sub-CIDRs, a power of two
	base    u128 // the cluster CIDR's first address

	mu       sync.Mutex
	used     []uint64 // bit i: sub-CIDR i was allocated or occupied
	reserved []uint64 // bit i: sub-CIDR i was excluded with Reserve
	count    int      // popcount(used | reserved), kept incrementally
	// next is where AllocateNext starts looking. Rotating it past the last
	// allocation makes sequential allocation O(1) instead of rescanning the
	// taken prefix of the bitmap, and it delays reuse of a just-released
	// CIDR, which gives routes and stale pod IPs of a deleted node time to
	// disappear before another node gets the same range.
	next int
}

// New returns an empty set that splits clusterCIDR into sub-CIDRs of
// prefix length subMaskSize. Host bits set in clusterCIDR are ignored, as
// the upstream --cluster-cidr parser does.
func New(clusterCIDR netip.Prefix, subMaskSize int) (*CIDRSet, error) {
	if !clusterCIDR.IsValid() {
		return nil, fmt.Errorf("cidrset: cluster CIDR %s: %w", clusterCIDR, ErrInvalidCIDR)
	}
	cluster := clusterCIDR.Masked()
	addrBits := cluster.Addr().BitLen()
	family := "IPv6"
	if cluster.Addr().Is4() {
		family = "IPv4"
	}
	switch {
	case subMaskSize > addrBits:
		return nil, fmt.Errorf("cidrset: sub-CIDR mask size %d for cluster CIDR %s is larger than %d, the length of an %s address: %w",
			subMaskSize, cluster, addrBits, family, ErrInvalidMaskSize)
	case subMaskSize < cluster.Bits():
		return nil, fmt.Errorf("cidrset: sub-CIDR mask size %d is smaller than the prefix length of cluster CIDR %s, so a sub-CIDR would not fit in it: %w",
			subMaskSize, cluster, ErrInvalidMaskSize)
	case subMaskSize-cluster.Bits() > MaxSubnetBits:
		return nil, fmt.Errorf("cidrset: sub-CIDR mask size %d splits cluster CIDR %s into 2^%d sub-CIDRs; the mask size may exceed the cluster prefix length by at most %d bits (%d sub-CIDRs), the same bound as upstream: %w",
			subMaskSize, cluster, subMaskSize-cluster.Bits(), MaxSubnetBits, 1<<MaxSubnetBits, ErrInvalidMaskSize)
	}
	size := 1 << (subMaskSize - cluster.Bits())
	words := (size + 63) / 64
	return &CIDRSet{
		cluster:  cluster,
		is4:      cluster.Addr().Is4(),
		subBits:  subMaskSize,
		shift:    uint(addrBits - subMaskSize),
		size:     size,
		base:     fromAddr(cluster.Addr()),
		used:     make([]uint64, words),
		reserved: make([]uint64, words),
	}, nil
}

// ClusterCIDR returns the (masked) cluster CIDR the set splits.
func (s *CIDRSet) ClusterCIDR() netip.Prefix { return s.cluster }

// SubMaskSize returns the prefix length of every sub-CIDR.
func (s *CIDRSet) SubMaskSize() int { return s.subBits }

// Size returns the number of sub-CIDRs in the set. MaxSubnetBits keeps it
// at most 65,536, so an int is enough even for IPv6.
func (s *CIDRSet) Size() int { return s.size }

// Used returns how many sub-CIDRs are not free: used or reserved.
func (s *CIDRSet) Used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// String describes the set and its usage, for logs and error messages.
func (s *CIDRSet) String() string {
	return fmt.Sprintf("%s split into /%d: %d of %d in use", s.cluster, s.subBits, s.Used(), s.size)
}

// AllocateNext marks the first free sub-CIDR at or after the rotating
// candidate position as used and returns it. It returns an error wrapping
// ErrCIDRRangeNoCIDRsRemaining when none is free.
//
// Cost: O(1) while allocations are sequential; in a fragmented set it
// skips 64 taken sub-CIDRs per step, so at most Size/64 word reads.
func (s *CIDRSet) AllocateNext() (netip.Prefix, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findFree(s.next)
	if !ok {
		return netip.Prefix{}, fmt.Errorf("cidrset: allocate /%d from %s (%d of %d in use): %w",
			s.subBits, s.cluster, s.count, s.size, ErrCIDRRangeNoCIDRsRemaining)
	}
	s.markUsed(i, i)
	s.next = (i + 1) & (s.size - 1) // size is a power of two
	return s.prefixAt(i), nil
}

// Occupy marks as used every sub-CIDR that p overlaps: p itself when it is
// exactly a sub-CIDR, all sub-CIDRs inside it when it is larger, and the
// one containing it when it is smaller. Occupying what is already used or
// reserved is not an error, so replaying Nodes' podCIDRs is idempotent.
// p must lie inside the cluster CIDR: otherwise the error wraps
// ErrOutsideClusterCIDR and nothing changes.
func (s *CIDRSet) Occupy(p netip.Prefix) error {
	lo, hi, err := s.containedSpan("occupy", p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markUsed(lo, hi)
	return nil
}

// Release is the inverse of Occupy for the same sub-CIDRs. Releasing a
// sub-CIDR that is free is not an error, so a retried release is safe;
// reserved sub-CIDRs stay reserved. Releasing a prefix smaller than a
// sub-CIDR frees the whole containing sub-CIDR, as Occupy took it whole.
func (s *CIDRSet) Release(p netip.Prefix) error {
	lo, hi, err := s.containedSpan("release", p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	forWords(lo, hi, func(w int, m uint64) {
		freed := m & s.used[w] &^ s.reserved[w]
		s.used[w] &^= m
		s.count -= bits.OnesCount64(freed)
	})
	return nil
}

// Reserve permanently excludes every sub-CIDR that overlaps p from
// allocation, and returns how many sub-CIDRs that is. Unlike Occupy it
// accepts any prefix of the set's family, clipping it to the cluster CIDR,
// because its purpose is to carve out ranges such as the service cluster IP
// range that may contain the cluster CIDR, lie inside it, or miss it (two
// prefixes never partly overlap); a disjoint prefix, or one of the other
// family, reserves nothing and returns 0. Release does not undo a
// reservation.
func (s *CIDRSet) Reserve(p netip.Prefix) (int, error) {
	if !p.IsValid() {
		return 0, fmt.Errorf("cidrset: reserve %s in %s: %w", p, s.cluster, ErrInvalidCIDR)
	}
	lo, hi, ok := s.overlapSpan(p)
	if !ok {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	forWords(lo, hi, func(w int, m uint64) {
		added := m &^ s.reserved[w] &^ s.used[w]
		s.reserved[w] |= m
		s.count += bits.OnesCount64(added)
	})
	return hi - lo + 1, nil
}

// InUse reports whether any sub-CIDR overlapping p is used or reserved, so
// a caller can tell whether occupying p would collide. It is false for an
// invalid prefix or one outside the cluster CIDR.
func (s *CIDRSet) InUse(p netip.Prefix) bool {
	if !p.IsValid() {
		return false
	}
	lo, hi, ok := s.overlapSpan(p)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inUse := false
	forWords(lo, hi, func(w int, m uint64) {
		inUse = inUse || (s.used[w]|s.reserved[w])&m != 0
	})
	return inUse
}

// containedSpan returns the sub-CIDR index range covered by p, which must be
// valid and inside the cluster CIDR. It reads only immutable fields.
func (s *CIDRSet) containedSpan(op string, p netip.Prefix) (lo, hi int, err error) {
	if !p.IsValid() {
		return 0, 0, fmt.Errorf("cidrset: %s %s in %s: %w", op, p, s.cluster, ErrInvalidCIDR)
	}
	p = p.Masked()
	// Contains is false across families, so one check covers both.
	if p.Bits() < s.cluster.Bits() || !s.cluster.Contains(p.Addr()) {
		return 0, 0, fmt.Errorf("cidrset: %s %s: %w %s", op, p, ErrOutsideClusterCIDR, s.cluster)
	}
	lo, hi = s.span(p)
	return lo, hi, nil
}

// overlapSpan is containedSpan clipped to the cluster CIDR: two prefixes
// either nest or are disjoint, so p either contains the whole cluster CIDR,
// lies inside it, or misses it.
func (s *CIDRSet) overlapSpan(p netip.Prefix) (lo, hi int, ok bool) {
	p = p.Masked()
	switch {
	case !p.Overlaps(s.cluster):
		return 0, 0, false
	case p.Bits() <= s.cluster.Bits():
		return 0, s.size - 1, true
	default:
		lo, hi = s.span(p)
		return lo, hi, true
	}
}

// span maps a masked prefix inside the cluster CIDR to the inclusive range
// of sub-CIDR indexes it overlaps.
func (s *CIDRSet) span(p netip.Prefix) (lo, hi int) {
	lo = int(fromAddr(p.Addr()).shr(s.shift).lo & uint64(s.size-1))
	if p.Bits() >= s.subBits {
		return lo, lo
	}
	return lo, lo + 1<<(s.subBits-p.Bits()) - 1
}

// prefixAt returns sub-CIDR i.
func (s *CIDRSet) prefixAt(i int) netip.Prefix {
	a := s.base.or(u128{lo: uint64(i)}.shl(s.shift)).addr(s.is4)
	return netip.PrefixFrom(a, s.subBits)
}

// findFree returns the first free index at or after start, wrapping once
// around the bitmap. It must be called with mu held.
func (s *CIDRSet) findFree(start int) (int, bool) {
	if s.count == s.size {
		return 0, false
	}
	n := len(s.used)
	w := start >> 6
	for k := 0; k <= n; k++ { // n+1 steps: the start word is visited twice
		free := ^(s.used[w] | s.reserved[w])
		if w == n-1 && s.size&63 != 0 {
			free &= 1<<(s.size&63) - 1 // bits past the last sub-CIDR
		}
		if k == 0 {
			free &= ^uint64(0) << (start & 63)
		}
		if free != 0 {
			return w<<6 + bits.TrailingZeros64(free), true
		}
		if w++; w == n {
			w = 0
		}
	}
	return 0, false
}

// markUsed sets the used bits of [lo, hi]. It must be called with mu held.
func (s *CIDRSet) markUsed(lo, hi int) {
	forWords(lo, hi, func(w int, m uint64) {
		added := m &^ s.used[w] &^ s.reserved[w]
		s.used[w] |= m
		s.count += bits.OnesCount64(added)
	})
}

// forWords calls fn for each bitmap word overlapping the inclusive index
// range [lo, hi], with the mask of that word's bits in range, so that range
// operations on a large prefix cost one step per 64 sub-CIDRs.
func forWords(lo, hi int, fn func(w int, mask uint64)) {
	for w := lo >> 6; w <= hi>>6; w++ {
		m := ^uint64(0)
		if w == lo>>6 {
			m &= ^uint64(0) << (lo & 63)
		}
		if w == hi>>6 {
			m &= ^uint64(0) >> (63 - hi&63)
		}
		fn(w, m)
	}
}
