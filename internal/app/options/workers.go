package options

import (
	"math"
	"strconv"
)

// Node initialization's workers when --concurrent-node-syncs is not given.
const (
	// NodeInitWritesPerWorker is the API writes per second one worker is
	// counted on for: a worker initializes a Node with two writes one
	// after the other (its status, then the Node), so at 100 ms a write
	// it sends 10 a second. Measured at 10,000 nodes on 2 cores, writes
	// took 54–59 ms on average, and 10 workers held node initialization
	// at 0.8–0.9 of a 200/s --kube-api-qps (docs/benchmarks.md, scale):
	// the client's rate, not the write latency, should be what bounds it.
	NodeInitWritesPerWorker = 10
	// MaxNodeInitWorkers bounds the derived count.
	MaxNodeInitWorkers = 100
)

// NodeInitWorkers is how many Nodes the node controller initializes at
// once: --concurrent-node-syncs when given; otherwise the larger of its
// default and --kube-api-qps / NodeInitWritesPerWorker (at most
// MaxNodeInitWorkers), so that a client allowed more writes a second gets
// the workers to send them.
func (o *Options) NodeInitWorkers() int {
	if o.nodeSyncsGiven {
		return int(o.ConcurrentNodeSyncs)
	}
	fromQPS := int(math.Ceil(float64(o.KubeAPIQPS) / NodeInitWritesPerWorker))
	return max(int(o.ConcurrentNodeSyncs), min(fromQPS, MaxNodeInitWorkers))
}

// givenInt32 is an int32 flag that records whether the command line set
// it, for a default derived from other flags.
type givenInt32 struct {
	p     *int32
	given *bool
}

func (f *givenInt32) String() string {
	if f.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*f.p), 10)
}

func (f *givenInt32) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return err
	}
	*f.p, *f.given = int32(v), true
	return nil
}

func (f *givenInt32) Type() string { return "int32" }
