package objcache

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// StrippedNodeStatus returns the names of the fields of a Node's status
// that the cache drops: no controller reads them, and the providers the
// controllers hand a cached Node to (the cloudprovider interfaces take
// *v1.Node) have no use for them: they describe the kubelet's images and
// volumes, not the machine. On a kubelet's Node the image list alone is up to 50 entries
// of several names each, most of the object; the volume lists grow with
// the Pods. Every other field is kept: the controllers read the
// conditions, addresses and labels, and providers may read nodeInfo (its
// system UUID) or capacity. TestNodeStatusFieldsAreClassified fails when a
// NodeStatus field is neither here nor in the kept list, and
// TestNoReaderOfStrippedFields when code outside tests reads one of them.
//
// Writes stay whole: the controllers patch a Node's status with a merge
// patch computed from the cached object, and a field absent from both
// sides of the diff is not in the patch, so the API server keeps it.
func StrippedNodeStatus() []string {
	return []string{"Images", "VolumesInUse", "VolumesAttached", "Config"}
}

// Transform is the transform every cached object goes through before
// it is stored: managedFields dropped from every object (a CCM never reads
// them, and they are about half of a cached Node), the unread status
// fields StrippedNodeStatus names dropped from Nodes, and the strings that
// Nodes repeat (label keys, zones, condition reasons, versions) shared
// through one table per call of Transform (interner). The object is
// the decoder's own, not yet shared, so it is changed in place.
func Transform() toolscache.TransformFunc {
	strs := newInterner()
	return func(in any) (any, error) {
		// Nil-checked: setting nil on an object without managedFields
		// would allocate nothing but still write (kubernetes#124337).
		if obj, err := meta.Accessor(in); err == nil && obj.GetManagedFields() != nil {
			obj.SetManagedFields(nil)
		}
		if n, ok := in.(*corev1.Node); ok {
			stripNodeStatus(&n.Status)
			strs.node(n)
		}
		return in, nil
	}
}

// stripNodeStatus clears the fields StrippedNodeStatus names; the table
// test keeps the two in step.
func stripNodeStatus(s *corev1.NodeStatus) {
	s.Images = nil
	s.VolumesInUse = nil
	s.VolumesAttached = nil
	s.Config = nil
}
