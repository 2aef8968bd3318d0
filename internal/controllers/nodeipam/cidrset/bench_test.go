package cidrset

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// BenchmarkAllocateNext measures allocation in a 65,536-entry set, the
// largest MaxSubnetBits allows.
func BenchmarkAllocateNext(b *testing.B) {
	// Sequential: nodes join a fresh cluster. The rotating index makes each
	// call O(1); the set is refilled off the clock when it runs out.
	b.Run("sequential", func(b *testing.B) {
		s := mustSet(b, "10.0.0.0/8", 24)
		for b.Loop() {
			if _, err := s.AllocateNext(); err != nil {
				b.StopTimer()
				s = mustSet(b, "10.0.0.0/8", 24)
				b.StartTimer()
			}
		}
	})
	// Churn: a cluster kept 90% full where a random node leaves for every
	// node that joins, so free sub-CIDRs are scattered across the bitmap.
	b.Run("churn_90pct", func(b *testing.B) {
		s := mustSet(b, "fd00:1:2::/48", 64)
		live := make([]netip.Prefix, 0, s.Size())
		for range s.Size() * 9 / 10 {
			p, err := s.AllocateNext()
			if err != nil {
				b.Fatal(err)
			}
			live = append(live, p)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			i := rng.IntN(len(live))
			if err := s.Release(live[i]); err != nil {
				b.Fatal(err)
			}
			p, err := s.AllocateNext()
			if err != nil {
				b.Fatal(err)
			}
			live[i] = p
		}
	})
}
