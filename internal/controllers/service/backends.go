package service

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/internal/ownership"
)

// backendPolicy returns which Nodes may be load balancer backends under a
// hybrid cluster's ownership policy: not a foreign one, whose machine the
// provider cannot address, unless foreignBackends says the network
// reaches it anyway. Nil (every Node) when the policy restricts nothing.
func backendPolicy(p ownership.Policy, foreignBackends bool) func(*corev1.Node) bool {
	if !p.Enabled() || foreignBackends {
		return nil
	}
	return func(n *corev1.Node) bool { return p.Of(n) != ownership.Foreign }
}
