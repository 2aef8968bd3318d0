package scenario

import (
	"context"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// nodeInit: the instances exist; the controller manager leads; then N
// nodes register at once, as external-cloud kubelets do. Measured: time
// until every node is initialized (providerID set, uninitialized taint
// gone), and the cloud, API and CPU cost of getting there.
func (e *Env) nodeInit(ctx context.Context, c harness.Contestant, cloud, dir string) (map[string]float64, map[string]int64, error) {
	cl, token, err := e.startCluster(ctx, dir, cloud, 0)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Stop()
	nodes := names(harness.NodeName, 1, e.S.Nodes)
	if _, err := cl.CreateInstances(ctx, nodes); err != nil {
		return nil, nil, err
	}
	ccm, err := e.startLeader(ctx, cl, c)
	if err != nil {
		return nil, nil, err
	}
	defer ccm.Stop(30 * time.Second)
	m, err := startMeter(ctx, cl, ccm, token)
	if err != nil {
		return nil, nil, err
	}
	took, err := e.initNodes(ctx, cl, nodes, nil, ccm)
	if err != nil {
		return nil, nil, err
	}
	figs := map[string]float64{results.FigConverge: took.Seconds()}
	if floor := apiFloor(len(nodes), e.S.KubeAPIQPS, e.S.KubeAPIBurst); floor > 0 {
		figs[results.FigAPIFloor], figs[results.FigFloorRatio] = floor, took.Seconds()/floor
	}
	ops, err := m.finish(ctx, figs)
	return figs, ops, err
}

// apiFloor is the least time n nodes take to initialize through an API
// client limited to qps requests a second with burst: two writes per node
// (the Node, then its status), the first burst of them at once. 0 when
// the burst covers them all.
func apiFloor(n, qps, burst int) float64 {
	if qps <= 0 {
		return 0
	}
	return max(0, float64(2*n-burst)) / float64(qps)
}
