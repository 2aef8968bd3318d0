package cloud

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// InstanceIndex is one successful InstanceLister answer, indexed so that
// controllers match Nodes to instances the way the provider's per-node calls
// would: by providerID when the Node has one (a machine's name may be reused
// by a newer machine), else by name.
type InstanceIndex struct {
	byProviderID map[string]*Instance
	byName       map[string]*Instance
	ambiguous    map[string]bool
}

// NewInstanceIndex indexes list; it keeps pointers into list.
func NewInstanceIndex(list []Instance) *InstanceIndex {
	x := &InstanceIndex{
		byProviderID: make(map[string]*Instance, len(list)),
		byName:       make(map[string]*Instance, len(list)),
		ambiguous:    map[string]bool{},
	}
	for i := range list {
		inst := &list[i]
		if inst.ProviderID != "" {
			x.byProviderID[inst.ProviderID] = inst
		}
		if inst.Name == "" {
			continue
		}
		if _, dup := x.byName[inst.Name]; dup {
			x.ambiguous[inst.Name] = true
		}
		x.byName[inst.Name] = inst
	}
	return x
}

// Lookup finds a Node's instance. ok is false when the list did not contain
// it, which, the list being complete, means the instance is gone.
func (x *InstanceIndex) Lookup(node *corev1.Node) (inst *Instance, ok bool, err error) {
	if node.Spec.ProviderID != "" {
		inst, ok = x.byProviderID[node.Spec.ProviderID]
		return inst, ok, nil
	}
	if x.ambiguous[node.Name] {
		return nil, false, fmt.Errorf("node %s: %w", node.Name, ErrAmbiguousName)
	}
	inst, ok = x.byName[node.Name]
	return inst, ok, nil
}
