package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/internal/controllers/route"
)

// hcloud's networks manifest, as upstream's app reads it: the route
// controller runs with the pod CIDRs kube-controller-manager allocated
// (here the test writes them, as kube-controller-manager would), and
// --allocate-node-cidrs=true under '*' starts no second allocator. The
// cluster CIDR only scopes the routes: a route outside it is left alone.
func TestRoutesForPodCIDRsAllocatedElsewhere(t *testing.T) {
	b := newRouteBed(t)
	b.startCCMWith("--controllers=*,-cloud-node-controller,-cloud-node-lifecycle-controller,-service-lb-controller",
		"--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16")

	b.addNode("k1")
	b.addNode("k2")
	b.addNode("bare")
	for name, cidr := range map[string]string{"k1": "10.244.7.0/24", "k2": "10.244.9.0/24"} {
		patch := fmt.Sprintf(`{"spec":{"podCIDR":%q,"podCIDRs":[%q]}}`, cidr, cidr)
		if _, err := b.cs.CoreV1().Nodes().Patch(b.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := "10.244.7.0/24→k1 10.244.9.0/24→k2"
	var got []string
	b.poll("routes of k1 and k2", func(ctx context.Context) (bool, error) {
		var err error
		got, err = b.table(ctx)
		return err == nil && strings.Join(got, " ") == want, nil
	})
	for _, n := range []string{"k1", "k2"} {
		b.waitCondition(n, corev1.ConditionFalse, route.ConditionRouteCreated, "Cloud routes exist")
	}

	// The route passes above ran with "bare" in the cache; had an
	// allocator run, it would have given it a pod CIDR first, as it does
	// before any route exists (TestRouteController).
	bare, err := b.cs.CoreV1().Nodes().Get(b.ctx, "bare", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bare.Spec.PodCIDR != "" || len(bare.Spec.PodCIDRs) != 0 {
		t.Errorf("node bare got pod CIDRs %v with no allocator asked for", bare.Spec.PodCIDRs)
	}
	mfs, err := b.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "stratus_nodeipam_") {
			t.Errorf("node IPAM controller started: %s registered", mf.GetName())
		}
	}
	for _, n := range []string{"k1", "k2", "bare"} {
		written := strings.Join(managers(t, b, n), ",")
		if n != "bare" && !strings.Contains(written, route.ControllerName) {
			t.Errorf("node %s: the route controller wrote nothing (managers %s)", n, written)
		}
		if strings.Contains(written, nodeipam.ControllerName) {
			t.Errorf("node %s written by %s", n, nodeipam.ControllerName)
		}
	}
}

func managers(t *testing.T, b *routeBed, name string) []string {
	t.Helper()
	n, err := b.cs.CoreV1().Nodes().Get(b.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range n.ManagedFields {
		out = append(out, m.Manager)
	}
	return out
}
