package cli

import (
	"slices"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// TestLBRowsShowEndpoints: a load balancer whose targets are endpoints
// shows how many each listener has, where one of nodes shows node ports.
func TestLBRowsShowEndpoints(t *testing.T) {
	t.Parallel()
	lbs := []api.LoadBalancer{
		{ID: "lb-1", LoadBalancerSpec: api.LoadBalancerSpec{Backends: []string{"i-1", "i-2"},
			Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: 30080}}}},
		{ID: "lb-2", LoadBalancerSpec: api.LoadBalancerSpec{Targets: api.TargetsEndpoints, Listeners: []api.Listener{
			{Protocol: api.ProtocolTCP, Port: 80, Endpoints: []api.Endpoint{{Address: "10.64.1.5", Port: 8080}, {Address: "10.64.1.6", Port: 8080}}},
			{Protocol: api.ProtocolUDP, Port: 53}}}},
	}
	rows := lbRows(lbs)()
	if got, want := rows[0][5:], []string{"TCP:80->30080", "2"}; !slices.Equal(got, want) {
		t.Errorf("node targets: %q, want %q", got, want)
	}
	if got, want := rows[1][5:], []string{"TCP:80->2 endpoints,UDP:53->0 endpoints", "endpoints"}; !slices.Equal(got, want) {
		t.Errorf("endpoint targets: %q, want %q", got, want)
	}
}
