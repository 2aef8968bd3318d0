package localcloud

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

var _ cloud.IPFamilyLister = (*loadBalancers)(nil)

// LoadBalancerIPFamilies implements cloud.IPFamilyLister: the families of
// the provider's config (ipFamilies), IPv4 by default. The service
// controller then refuses a Service that asks for another with a
// condition before any call, and hands over a PreferDualStack one with
// the families served.
func (l *loadBalancers) LoadBalancerIPFamilies() []corev1.IPFamily {
	return slices.Clone(l.families)
}

// familiesOf maps the Service's spec.ipFamilies onto the load balancer's,
// in the Service's order; nil (IPv4) for a Service without them. A family
// the config does not serve is refused with cloud.ErrIPFamilyNotSupported
// (the service controller does not hand one over unless the extensions
// are off).
func (l *loadBalancers) familiesOf(svc *corev1.Service) ([]api.IPFamily, error) {
	var out []api.IPFamily
	for _, f := range svc.Spec.IPFamilies {
		if !slices.Contains(l.families, f) {
			return nil, fmt.Errorf("spec.ipFamilies %v: this cloud's load balancers serve %v (the provider config's ipFamilies): %w",
				svc.Spec.IPFamilies, l.families, cloud.ErrIPFamilyNotSupported)
		}
		out = append(out, api.IPFamily(f))
	}
	if slices.Equal(out, []api.IPFamily{api.IPv4}) {
		// The same load balancer as one made before families were
		// recorded: no spec change, no update call.
		return nil, nil
	}
	return out, nil
}

// requestedVIPs checks spec.loadBalancerIP against the load balancer's
// families and returns it parsed.
func requestedVIPs(ip string, spec *api.LoadBalancerSpec) (netip.Addr, error) {
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil || a.Zone() != "" || a.Is4In6():
		return a, fmt.Errorf("spec.loadBalancerIP %q: not an IP address", ip)
	case a.Is4() && !spec.Has(api.IPv4):
		return a, fmt.Errorf("spec.loadBalancerIP %q: an IPv4 address, and spec.ipFamilies has no IPv4", ip)
	case a.Is6() && !spec.Has(api.IPv6):
		return a, fmt.Errorf("spec.loadBalancerIP %q: an IPv6 address, and spec.ipFamilies %v has no IPv6", ip, spec.Families())
	}
	return a, nil
}
