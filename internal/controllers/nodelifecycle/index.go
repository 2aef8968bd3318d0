package nodelifecycle

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// index is one successful list answer, looked up as the provider's
// InstanceExists would. A Node without providerID whose name several listed
// instances carry cannot be judged gone or stopped: cloud.ErrAmbiguousName.
type index struct{ *cloud.InstanceIndex }

func newIndex(list []cloud.Instance) *index {
	return &index{cloud.NewInstanceIndex(list)}
}

// lookup answers for one Node: absence from a successful list means gone.
func (x *index) lookup(n *corev1.Node) (exists, shutdown bool, err error) {
	inst, ok, err := x.Lookup(n)
	if err != nil || !ok {
		return false, false, err
	}
	return true, inst.Shutdown, nil
}

// attentionField names the cache index of the Nodes a monitor period must
// look at: NotReady ones, and Ready ones still carrying the shutdown taint.
// A period lists only those. Listing every Node instead would deep-copy the
// whole cache every period (5 s by default): at 1,000 nodes, most of the
// daemon's CPU and allocations at idle, spent on Ready nodes that need
// nothing.
const attentionField = "stratus.node-lifecycle.attention"

// attentionValue is the index value of a Node that needs attention.
const attentionValue = "true"

// needsAttention is the index function of attentionField.
func needsAttention(obj client.Object) []string {
	n, ok := obj.(*corev1.Node)
	if !ok || (isReady(n) && !HasShutdownTaint(n)) {
		return nil
	}
	return []string{attentionValue}
}
