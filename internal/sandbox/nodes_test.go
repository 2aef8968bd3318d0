package sandbox

import (
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// Only the sandbox's own instances above --nodes are surplus; a user's
// machine is theirs whatever its name.
func TestSurplusOnlyTheSandboxsOwnInstances(t *testing.T) {
	s := &sandbox{o: Options{Nodes: 2}}
	own := map[string]string{api.TagCluster: clusterName, ownTag: "true"}
	users := map[string]string{api.TagCluster: clusterName}
	for _, c := range []struct {
		in   api.Instance
		want bool
	}{
		{api.Instance{Name: "node-0003", Tags: own, State: api.InstanceRunning}, true},
		{api.Instance{Name: "node-0004", Tags: own, State: api.InstanceStopped}, true},
		{api.Instance{Name: "node-0002", Tags: own, State: api.InstanceRunning}, false},
		{api.Instance{Name: "node-0003", Tags: own, State: api.InstanceTerminated}, false},
		{api.Instance{Name: "node-0042", Tags: users, State: api.InstanceRunning}, false},
		{api.Instance{Name: "node-3", Tags: own, State: api.InstanceRunning}, false},
		{api.Instance{Name: "web-1", Tags: own, State: api.InstanceRunning}, false},
	} {
		if got := s.surplus(c.in); got != c.want {
			t.Errorf("surplus(%s tags=%v %s) = %v, want %v", c.in.Name, c.in.Tags, c.in.State, got, c.want)
		}
	}
}
