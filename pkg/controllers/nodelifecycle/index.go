package nodelifecycle

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// errAmbiguousName: a Node without providerID whose name several listed
// instances carry cannot be judged gone or stopped.
var errAmbiguousName = errors.New("more than one instance carries the node's name")

// index is one successful list answer, looked up by providerID, or by name
// for Nodes that have none (as the provider's InstanceExists would).
type index struct {
	byProviderID map[string]*cloud.Instance
	byName       map[string]*cloud.Instance
	ambiguous    map[string]bool
}

func newIndex(list []cloud.Instance) *index {
	idx := &index{
		byProviderID: make(map[string]*cloud.Instance, len(list)),
		byName:       make(map[string]*cloud.Instance, len(list)),
		ambiguous:    map[string]bool{},
	}
	for i := range list {
		inst := &list[i]
		if inst.ProviderID != "" {
			idx.byProviderID[inst.ProviderID] = inst
		}
		if inst.Name == "" {
			continue
		}
		if _, dup := idx.byName[inst.Name]; dup {
			idx.ambiguous[inst.Name] = true
		}
		idx.byName[inst.Name] = inst
	}
	return idx
}

// lookup answers for one Node: absence from a successful list means gone.
func (x *index) lookup(n *v1.Node) (exists, shutdown bool, err error) {
	var inst *cloud.Instance
	if n.Spec.ProviderID != "" {
		inst = x.byProviderID[n.Spec.ProviderID]
	} else {
		if x.ambiguous[n.Name] {
			return false, false, fmt.Errorf("node %s: %w", n.Name, errAmbiguousName)
		}
		inst = x.byName[n.Name]
	}
	if inst == nil {
		return false, false, nil
	}
	return true, inst.Shutdown, nil
}
