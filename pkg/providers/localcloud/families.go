package localcloud

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

var _ cloud.IPFamilyLister = (*loadBalancers)(nil)

// LoadBalancerIPFamilies implements cloud.IPFamilyLister: localcloud's
// VIPs are IPv4, so the service controller refuses IPv6-only and
// RequireDualStack Services with a condition before any call, and serves
// PreferDualStack ones on IPv4.
func (l *loadBalancers) LoadBalancerIPFamilies() []corev1.IPFamily {
	return []corev1.IPFamily{corev1.IPv4Protocol}
}
