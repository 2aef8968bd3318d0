package cidrset

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func mustSet(t testing.TB, cluster string, mask int) *CIDRSet {
	t.Helper()
	s, err := New(netip.MustParsePrefix(cluster), mask)
	if err != nil {
		t.Fatalf("New(%s, %d): %v", cluster, mask, err)
	}
	return s
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cluster  netip.Prefix
		mask     int
		wantSize int
		wantErr  error
		wantMsg  []string // substrings the error must name
	}{
		{name: "ipv4 /16 to /24", cluster: pfx("10.244.0.0/16"), mask: 24, wantSize: 256},
		{name: "ipv4 /8 to /24 at the bound", cluster: pfx("10.0.0.0/8"), mask: 24, wantSize: 65536},
		{name: "ipv4 odd /22 to /26", cluster: pfx("10.0.0.0/22"), mask: 26, wantSize: 16},
		{name: "ipv4 /32 to /32", cluster: pfx("10.0.0.7/32"), mask: 32, wantSize: 1},
		{name: "ipv4 equal masks", cluster: pfx("10.0.0.0/24"), mask: 24, wantSize: 1},
		{name: "ipv4 host bits ignored", cluster: pfx("10.244.9.7/16"), mask: 24, wantSize: 256},
		{name: "ipv6 /48 to /64", cluster: pfx("fd00:1:2::/48"), mask: 64, wantSize: 65536},
		{name: "ipv6 /56 to /64", cluster: pfx("fd00:0:0:ab00::/56"), mask: 64, wantSize: 256},
		{name: "ipv6 /0 to /16", cluster: pfx("::/0"), mask: 16, wantSize: 65536},
		{name: "ipv6 /120 to /128", cluster: pfx("fd00::/120"), mask: 128, wantSize: 256},
		{
			name: "ipv4 /8 to /25 over the bound", cluster: pfx("10.0.0.0/8"), mask: 25,
			wantErr: ErrInvalidMaskSize, wantMsg: []string{"25", "10.0.0.0/8", "2^17", "at most 16 bits"},
		},
		{
			name: "ipv4 /8 to /32 over the bound", cluster: pfx("10.0.0.0/8"), mask: 32,
			wantErr: ErrInvalidMaskSize, wantMsg: []string{"32", "2^24"},
		},
		{
			name: "ipv4 mask smaller than cluster", cluster: pfx("10.244.0.0/16"), mask: 15,
			wantErr: ErrInvalidMaskSize, wantMsg: []string{"15", "10.244.0.0/16", "smaller"},
		},
		{
			name: "negative mask", cluster: pfx("10.244.0.0/16"), mask: -1,
			wantErr: ErrInvalidMaskSize, wantMsg: []string{"-1"},
		},
		{
			name: "ipv4 mask too large", cluster: pfx("10.244.0.0/24"), mask: 33,
			wantErr: ErrInvalidMaskSize, wantMsg: []string{"33", "32", "IPv4"},
		},
		{
			name: "ipv6 mask too large", cluster: pfx("fd00::/120"), mask: 129,
			wantErr: ErrInvalidMaskSize, wantMsg: []string{"129", "128", "IPv6"},
		},
		{
			name: "ipv6 /48 to /65 over the bound", cluster: pfx("fd00::/48"), mask: 65,
			wantErr: ErrInvalidMaskSize, wantMsg: []string{"65", "fd00::/48", "2^17"},
		},
		{
			name: "ipv6 /48 to /112 over the bound", cluster: pfx("fd00::/48"), mask: 112,
			wantErr: ErrInvalidMaskSize, wantMsg: []string{"112", "2^64"},
		},
		{name: "invalid cluster CIDR", cluster: netip.Prefix{}, mask: 24, wantErr: ErrInvalidCIDR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cluster, tt.mask)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("New(%s, %d) error = %v, want %v", tt.cluster, tt.mask, err, tt.wantErr)
				}
				for _, sub := range tt.wantMsg {
					if !strings.Contains(err.Error(), sub) {
						t.Errorf("error %q does not mention %q", err, sub)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%s, %d): %v", tt.cluster, tt.mask, err)
			}
			if s.Size() != tt.wantSize || s.Used() != 0 {
				t.Errorf("Size() = %d, Used() = %d, want %d, 0", s.Size(), s.Used(), tt.wantSize)
			}
			if s.ClusterCIDR() != tt.cluster.Masked() || s.SubMaskSize() != tt.mask {
				t.Errorf("ClusterCIDR() = %s /%d, want %s /%d", s.ClusterCIDR(), s.SubMaskSize(), tt.cluster.Masked(), tt.mask)
			}
		})
	}
}

// TestAllocateUntilExhausted allocates every sub-CIDR and checks order,
// shape, uniqueness and the exhaustion error.
func TestAllocateUntilExhausted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cluster   string
		mask      int
		wantFirst []string // the first allocations, in order
		wantLast  string
	}{
		{"10.244.0.0/16", 24, []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}, "10.244.255.0/24"},
		{"10.0.0.0/22", 26, []string{"10.0.0.0/26", "10.0.0.64/26", "10.0.0.128/26", "10.0.0.192/26", "10.0.1.0/26"}, "10.0.3.192/26"},
		{"10.0.0.0/8", 24, []string{"10.0.0.0/24", "10.0.1.0/24"}, "10.255.255.0/24"},
		{"192.168.1.0/24", 24, []string{"192.168.1.0/24"}, "192.168.1.0/24"},
		{"192.168.1.0/30", 32, []string{"192.168.1.0/32", "192.168.1.1/32", "192.168.1.2/32"}, "192.168.1.3/32"},
		{"fd00:0:0:ab00::/56", 64, []string{"fd00:0:0:ab00::/64", "fd00:0:0:ab01::/64"}, "fd00:0:0:abff::/64"},
		{"fd00:1:2::/48", 64, []string{"fd00:1:2::/64", "fd00:1:2:1::/64"}, "fd00:1:2:ffff::/64"},
		{"fd00::/60", 68, []string{"fd00::/68", "fd00:0:0:0:1000::/68"}, "fd00:0:0:f:f000::/68"},
		{"fd00::/120", 128, []string{"fd00::/128", "fd00::1/128"}, "fd00::ff/128"},
	}
	for _, tt := range tests {
		t.Run(tt.cluster+"_to_"+strconv.Itoa(tt.mask), func(t *testing.T) {
			s := mustSet(t, tt.cluster, tt.mask)
			seen := make(map[netip.Prefix]bool, s.Size())
			var last netip.Prefix
			for i := range s.Size() {
				p, err := s.AllocateNext()
				if err != nil {
					t.Fatalf("allocation %d of %d: %v", i+1, s.Size(), err)
				}
				if i < len(tt.wantFirst) && p != pfx(tt.wantFirst[i]) {
					t.Errorf("allocation %d = %s, want %s", i+1, p, tt.wantFirst[i])
				}
				if p.Bits() != tt.mask || !s.ClusterCIDR().Contains(p.Addr()) || p.Masked() != p {
					t.Fatalf("allocation %s is not a /%d inside %s", p, tt.mask, s.ClusterCIDR())
				}
				if seen[p] {
					t.Fatalf("%s allocated twice", p)
				}
				seen[p] = true
				last = p
			}
			if last != pfx(tt.wantLast) {
				t.Errorf("last allocation = %s, want %s", last, tt.wantLast)
			}
			if s.Used() != s.Size() {
				t.Errorf("Used() = %d, want %d", s.Used(), s.Size())
			}
			p, err := s.AllocateNext()
			if !errors.Is(err, ErrCIDRRangeNoCIDRsRemaining) || p.IsValid() {
				t.Fatalf("AllocateNext on a full set = %s, %v; want no prefix and ErrCIDRRangeNoCIDRsRemaining", p, err)
			}
			if !strings.Contains(err.Error(), s.ClusterCIDR().String()) {
				t.Errorf("exhaustion error %q does not name the cluster CIDR", err)
			}
		})
	}
}

func TestOccupyReleaseRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cluster  string
		mask     int
		occupy   string
		wantUsed int
		inUse    []string // sub-CIDRs the occupation covers
		notInUse []string // neighbours it must not cover
	}{
		{
			name: "exact sub-CIDR", cluster: "10.244.0.0/16", mask: 24, occupy: "10.244.7.0/24", wantUsed: 1,
			inUse: []string{"10.244.7.0/24"}, notInUse: []string{"10.244.6.0/24", "10.244.8.0/24"},
		},
		{
			name: "larger prefix takes every sub-CIDR inside", cluster: "10.244.0.0/16", mask: 24, occupy: "10.244.4.0/22", wantUsed: 4,
			inUse:    []string{"10.244.4.0/24", "10.244.5.0/24", "10.244.6.0/24", "10.244.7.0/24"},
			notInUse: []string{"10.244.3.0/24", "10.244.8.0/24"},
		},
		{
			name: "larger prefix across bitmap words", cluster: "10.0.0.0/8", mask: 24, occupy: "10.1.0.0/16", wantUsed: 256,
			inUse: []string{"10.1.0.0/24", "10.1.63.0/24", "10.1.64.0/24", "10.1.255.0/24"}, notInUse: []string{"10.0.255.0/24", "10.2.0.0/24"},
		},
		{
			name: "the whole cluster CIDR", cluster: "10.0.0.0/22", mask: 26, occupy: "10.0.0.0/22", wantUsed: 16,
			inUse: []string{"10.0.0.0/26", "10.0.3.192/26"},
		},
		{
			name: "smaller prefix takes the containing sub-CIDR", cluster: "10.244.0.0/16", mask: 24, occupy: "10.244.3.128/25", wantUsed: 1,
			inUse: []string{"10.244.3.0/24", "10.244.3.0/26"}, notInUse: []string{"10.244.2.0/24", "10.244.4.0/24"},
		},
		{
			name: "single address", cluster: "10.0.0.0/22", mask: 26, occupy: "10.0.1.70/32", wantUsed: 1,
			inUse: []string{"10.0.1.64/26"}, notInUse: []string{"10.0.1.0/26", "10.0.1.128/26"},
		},
		{
			name: "host bits are masked", cluster: "10.244.0.0/16", mask: 24, occupy: "10.244.9.77/24", wantUsed: 1,
			inUse: []string{"10.244.9.0/24"},
		},
		{
			name: "ipv6 exact", cluster: "fd00:1:2::/48", mask: 64, occupy: "fd00:1:2:beef::/64", wantUsed: 1,
			inUse: []string{"fd00:1:2:beef::/64"}, notInUse: []string{"fd00:1:2:beee::/64", "fd00:1:2:bef0::/64"},
		},
		{
			name: "ipv6 larger", cluster: "fd00:0:0:ab00::/56", mask: 64, occupy: "fd00:0:0:ab40::/58", wantUsed: 64,
			inUse: []string{"fd00:0:0:ab40::/64", "fd00:0:0:ab7f::/64"}, notInUse: []string{"fd00:0:0:ab3f::/64", "fd00:0:0:ab80::/64"},
		},
		{
			name: "ipv6 smaller", cluster: "fd00:0:0:ab00::/56", mask: 64, occupy: "fd00:0:0:ab12::1/128", wantUsed: 1,
			inUse: []string{"fd00:0:0:ab12::/64"}, notInUse: []string{"fd00:0:0:ab13::/64"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSet(t, tt.cluster, tt.mask)
			for round := range 2 { // the second round shows release left nothing behind
				if err := s.Occupy(pfx(tt.occupy)); err != nil {
					t.Fatalf("round %d: Occupy(%s): %v", round, tt.occupy, err)
				}
				// Occupying again is idempotent.
				if err := s.Occupy(pfx(tt.occupy)); err != nil || s.Used() != tt.wantUsed {
					t.Fatalf("round %d: second Occupy(%s) = %v, Used() = %d, want nil, %d", round, tt.occupy, err, s.Used(), tt.wantUsed)
				}
				for _, c := range tt.inUse {
					if !s.InUse(pfx(c)) {
						t.Errorf("round %d: InUse(%s) = false after Occupy(%s)", round, c, tt.occupy)
					}
				}
				for _, c := range tt.notInUse {
					if s.InUse(pfx(c)) {
						t.Errorf("round %d: InUse(%s) = true after Occupy(%s)", round, c, tt.occupy)
					}
				}
				for range 2 { // releasing twice is not an error
					if err := s.Release(pfx(tt.occupy)); err != nil {
						t.Fatalf("round %d: Release(%s): %v", round, tt.occupy, err)
					}
				}
				if s.Used() != 0 || s.InUse(s.ClusterCIDR()) {
					t.Fatalf("round %d: after Release Used() = %d, InUse(cluster) = %v; want 0, false", round, s.Used(), s.InUse(s.ClusterCIDR()))
				}
			}
		})
	}
}

func TestOccupiedIsSkippedByAllocateNext(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "10.244.0.0/16", 24)
	for _, p := range []string{"10.244.0.0/24", "10.244.2.0/23", "10.244.5.9/32"} {
		if err := s.Occupy(pfx(p)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"10.244.1.0/24", "10.244.4.0/24", "10.244.6.0/24"}
	for _, w := range want {
		if p, err := s.AllocateNext(); err != nil || p != pfx(w) {
			t.Fatalf("AllocateNext() = %s, %v; want %s", p, err, w)
		}
	}
	if s.Used() != 7 {
		t.Errorf("Used() = %d, want 7", s.Used())
	}
	// Occupying an allocated sub-CIDR, as replaying Nodes after a restart
	// does, must not count it twice.
	if err := s.Occupy(pfx("10.244.4.0/24")); err != nil || s.Used() != 7 {
		t.Errorf("Occupy of an allocated sub-CIDR = %v, Used() = %d; want nil, 7", err, s.Used())
	}
}

func TestOutsideClusterCIDR(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "10.244.0.0/16", 24)
	if err := s.Occupy(pfx("10.244.1.0/24")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		p       netip.Prefix
		wantErr error
	}{
		{"disjoint", pfx("10.245.0.0/24"), ErrOutsideClusterCIDR},
		{"adjacent below", pfx("10.243.255.0/24"), ErrOutsideClusterCIDR},
		{"containing the cluster CIDR", pfx("10.0.0.0/8"), ErrOutsideClusterCIDR},
		{"default route", pfx("0.0.0.0/0"), ErrOutsideClusterCIDR},
		{"other family", pfx("fd00::/64"), ErrOutsideClusterCIDR},
		{"ipv4-mapped ipv6", pfx("::ffff:10.244.1.0/120"), ErrOutsideClusterCIDR},
		{"invalid", netip.Prefix{}, ErrInvalidCIDR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for op, fn := range map[string]func(netip.Prefix) error{"Occupy": s.Occupy, "Release": s.Release} {
				err := fn(tt.p)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("%s(%s) = %v, want %v", op, tt.p, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.p.String()) {
					t.Errorf("%s error %q does not name %s", op, err, tt.p)
				}
			}
			if errors.Is(tt.wantErr, ErrOutsideClusterCIDR) && s.InUse(tt.p) != tt.p.Overlaps(s.ClusterCIDR()) {
				t.Errorf("InUse(%s) = %v", tt.p, s.InUse(tt.p))
			}
			if s.Used() != 1 || !s.InUse(pfx("10.244.1.0/24")) {
				t.Errorf("a rejected call changed the set: %s", s)
			}
		})
	}
}

func TestReserve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cluster   string
		mask      int
		reserve   string
		wantCount int
	}{
		{"service range inside the cluster CIDR", "10.0.0.0/8", 24, "10.96.0.0/12", 4096},
		{"range smaller than a sub-CIDR", "10.244.0.0/16", 24, "10.244.3.16/28", 1},
		{"range containing the cluster CIDR", "10.244.0.0/16", 24, "10.0.0.0/8", 256},
		{"disjoint range", "10.244.0.0/16", 24, "10.96.0.0/12", 0},
		{"other family", "10.244.0.0/16", 24, "fd00::/108", 0},
		{"ipv6 service range", "fd00:1:2::/48", 64, "fd00:1:2:ff00::/56", 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSet(t, tt.cluster, tt.mask)
			r := pfx(tt.reserve)
			n, err := s.Reserve(r)
			if err != nil || n != tt.wantCount || s.Used() != tt.wantCount {
				t.Fatalf("Reserve(%s) = %d, %v, Used() = %d; want %d, nil, %d", r, n, err, s.Used(), tt.wantCount, tt.wantCount)
			}
			// Reserving again changes nothing.
			if n, err := s.Reserve(r); err != nil || n != tt.wantCount || s.Used() != tt.wantCount {
				t.Fatalf("second Reserve(%s) = %d, %v, Used() = %d", r, n, err, s.Used())
			}
			if s.InUse(r) != (tt.wantCount > 0) {
				t.Errorf("InUse(%s) = %v", r, s.InUse(r))
			}
			// Release must not hand a reserved range back.
			if tt.wantCount > 0 && s.ClusterCIDR().Contains(r.Addr()) {
				if err := s.Release(r); err != nil || s.Used() != tt.wantCount {
					t.Fatalf("Release(%s) = %v, Used() = %d; want nil, %d", r, err, s.Used(), tt.wantCount)
				}
			}
			for range s.Size() - tt.wantCount {
				p, err := s.AllocateNext()
				if err != nil {
					t.Fatalf("AllocateNext with %d/%d used: %v", s.Used(), s.Size(), err)
				}
				if p.Overlaps(r) {
					t.Fatalf("AllocateNext() = %s, which overlaps reserved %s", p, r)
				}
			}
			if _, err := s.AllocateNext(); !errors.Is(err, ErrCIDRRangeNoCIDRsRemaining) {
				t.Fatalf("AllocateNext past the free sub-CIDRs = %v, want ErrCIDRRangeNoCIDRsRemaining", err)
			}
		})
	}
	t.Run("invalid", func(t *testing.T) {
		s := mustSet(t, "10.244.0.0/16", 24)
		if _, err := s.Reserve(netip.Prefix{}); !errors.Is(err, ErrInvalidCIDR) {
			t.Errorf("Reserve(invalid) = %v, want ErrInvalidCIDR", err)
		}
	})
	t.Run("occupy and release over a reservation", func(t *testing.T) {
		s := mustSet(t, "10.244.0.0/16", 24)
		if _, err := s.Reserve(pfx("10.244.8.0/22")); err != nil {
			t.Fatal(err)
		}
		// A Node whose podCIDR overlaps the reservation is recorded without
		// double counting, and deleting it leaves the reservation in place.
		if err := s.Occupy(pfx("10.244.8.0/21")); err != nil || s.Used() != 8 {
			t.Fatalf("Occupy = %v, Used() = %d; want nil, 8", err, s.Used())
		}
		if err := s.Release(pfx("10.244.8.0/21")); err != nil || s.Used() != 4 {
			t.Fatalf("Release = %v, Used() = %d; want nil, 4", err, s.Used())
		}
		if !s.InUse(pfx("10.244.9.0/24")) || s.InUse(pfx("10.244.12.0/24")) {
			t.Errorf("reservation lost or release incomplete: %s", s)
		}
	})
}

func TestReleaseThenReallocate(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "10.0.0.0/24", 26) // 4 sub-CIDRs
	for range 4 {
		if _, err := s.AllocateNext(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Release(pfx("10.0.0.64/26")); err != nil {
		t.Fatal(err)
	}
	if p, err := s.AllocateNext(); err != nil || p != pfx("10.0.0.64/26") {
		t.Fatalf("AllocateNext after release = %s, %v; want 10.0.0.64/26", p, err)
	}
	if _, err := s.AllocateNext(); !errors.Is(err, ErrCIDRRangeNoCIDRsRemaining) {
		t.Fatalf("AllocateNext on a full set = %v", err)
	}
}

// TestRotatingIndex checks that a released sub-CIDR is not reused until the
// candidate index has gone round, and that the wraparound finds it, also
// across bitmap words.
func TestRotatingIndex(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "10.244.0.0/16", 24)
	nth := func(i int) netip.Prefix { return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i), 0}), 24) }
	for i := range 200 {
		if p, _ := s.AllocateNext(); p != nth(i) {
			t.Fatalf("allocation %d = %s, want %s", i, p, nth(i))
		}
	}
	for _, i := range []int{10, 130} {
		if err := s.Release(nth(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The index keeps moving forward instead of returning to the hole.
	for i := 200; i < 256; i++ {
		if p, _ := s.AllocateNext(); p != nth(i) {
			t.Fatalf("allocation = %s, want %s", p, nth(i))
		}
	}
	// Past the end it wraps to the holes, in address order.
	for _, i := range []int{10, 130} {
		if p, err := s.AllocateNext(); err != nil || p != nth(i) {
			t.Fatalf("after wraparound AllocateNext() = %s, %v; want %s", p, err, nth(i))
		}
	}
	if _, err := s.AllocateNext(); !errors.Is(err, ErrCIDRRangeNoCIDRsRemaining) {
		t.Fatalf("AllocateNext on a full set = %v", err)
	}
	// A hole before the index (in the same word as it) is found by going
	// round once: the candidate is now 131, the hole is 129.
	if err := s.Release(nth(129)); err != nil {
		t.Fatal(err)
	}
	if p, err := s.AllocateNext(); err != nil || p != nth(129) {
		t.Fatalf("AllocateNext() = %s, %v; want %s", p, err, nth(129))
	}
}

func TestRotatingIndexSmallSet(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "10.0.0.0/22", 26) // 16 sub-CIDRs, less than one bitmap word
	for range 16 {
		if _, err := s.AllocateNext(); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"10.0.2.192/26", "10.0.0.192/26"} { // indexes 11 and 3
		if err := s.Release(pfx(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"10.0.0.192/26", "10.0.2.192/26"} {
		if p, err := s.AllocateNext(); err != nil || p != pfx(want) {
			t.Fatalf("AllocateNext() = %s, %v; want %s", p, err, want)
		}
	}
	if _, err := s.AllocateNext(); !errors.Is(err, ErrCIDRRangeNoCIDRsRemaining) {
		t.Fatalf("AllocateNext on a full set = %v", err)
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "fd00:0:0:ab00::/56", 64)
	if _, err := s.AllocateNext(); err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "fd00:0:0:ab00::/56 split into /64: 1 of 256 in use"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestConcurrentAllocate is meaningful under -race: the set's own lock
// must make concurrent callers get distinct sub-CIDRs.
func TestConcurrentAllocate(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "10.0.0.0/14", 24) // 1024
	var (
		mu  sync.Mutex
		got = map[netip.Prefix]int{}
		wg  sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				p, err := s.AllocateNext()
				if err != nil {
					return
				}
				_ = s.InUse(p)
				mu.Lock()
				got[p]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != s.Size() || s.Used() != s.Size() {
		t.Fatalf("%d distinct allocations, Used() = %d; want %d", len(got), s.Used(), s.Size())
	}
	for p, n := range got {
		if n != 1 {
			t.Fatalf("%s allocated %d times", p, n)
		}
	}
}
