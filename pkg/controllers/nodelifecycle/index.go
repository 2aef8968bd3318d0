package nodelifecycle

import (
	v1 "k8s.io/api/core/v1"

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
func (x *index) lookup(n *v1.Node) (exists, shutdown bool, err error) {
	inst, ok, err := x.Lookup(n)
	if err != nil || !ok {
		return false, false, err
	}
	return true, inst.Shutdown, nil
}
