package route

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// BenchmarkBuildPlan measures the in-memory part of a steady-state pass of
// a 5,000-node dual-stack cluster: every route exists, nothing to do.
func BenchmarkBuildPlan(b *testing.B) {
	const n = 5000
	nodes := make([]corev1.Node, n)
	var routes []*cloudprovider.Route
	for i := range nodes {
		v4 := fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)
		v6 := fmt.Sprintf("fd00:10:244:%x::/64", i)
		nodes[i] = *node(fmt.Sprintf("n%d", i), "lc://x", v4, v6)
		for _, c := range []string{v4, v6} {
			routes = append(routes, &cloudprovider.Route{Name: c, TargetNode: types.NodeName(nodes[i].Name), DestinationCIDR: c})
		}
	}
	cluster := []netip.Prefix{netip.MustParsePrefix("10.64.0.0/10"), netip.MustParsePrefix("fd00:10:244::/48")}
	for b.Loop() {
		p := buildPlan(nodes, routes, cluster)
		if len(p.create)+len(p.remove) != 0 {
			b.Fatalf("plan has %d creates, %d removes", len(p.create), len(p.remove))
		}
	}
}
