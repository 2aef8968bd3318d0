package explain

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkStoreBytesPerNode measures the live heap of the entries the
// node controllers leave per Node: a successful sync from the node
// controller and one from the route controller, no cloud call of its own
// (initialization and refresh list instances in batches).
//
//	go test -run '^$' -bench StoreBytesPerNode -benchtime 1x ./internal/explain/
func BenchmarkStoreBytesPerNode(b *testing.B) {
	const n = 10000
	for range b.N {
		s := NewStore()
		refs := make([]Ref, n)
		for i := range refs {
			refs[i] = Ref{Kind: KindNode, Name: fmt.Sprintf("node-%05d", i)}
		}
		before := liveHeap()
		for _, r := range refs {
			s.Synced(r, "cloud-node-controller", Outcome{})
			s.Synced(r, "node-route-controller", Outcome{})
		}
		after := liveHeap()
		runtime.KeepAlive(s)
		b.ReportMetric(float64(after-before)/n, "B/node")
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
