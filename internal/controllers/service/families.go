package service

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ReasonIPFamilyNotSupported is the LoadBalancerServing condition's reason,
// and an event's, when the Service asks for an IP family the cloud's load
// balancers cannot serve (cloud.ErrIPFamilyNotSupported).
const ReasonIPFamilyNotSupported = "IPFamilyNotSupported"

// ReasonIPFamilyNotServed is the event of a load balancer that serves fewer
// of the Service's families than it asked for: a PreferDualStack Service
// on a cloud that serves one family, or a provider whose status lacks an
// ingress IP of a family it was handed.
const ReasonIPFamilyNotServed = "IPFamilyNotServed"

// declaredFamilies reads and checks the provider's IPFamilyLister: nil
// when there is none or it lists none (the provider declares nothing), an
// error naming the value when it lists an unknown family or one twice.
func declaredFamilies(l cloud.IPFamilyLister) ([]corev1.IPFamily, error) {
	if l == nil {
		return nil, nil
	}
	fams := l.LoadBalancerIPFamilies()
	if len(fams) == 0 {
		return nil, nil
	}
	for i, f := range fams {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			return nil, fmt.Errorf("service controller: the provider's LoadBalancerIPFamilies[%d] is %q; want %q or %q", i, f, corev1.IPv4Protocol, corev1.IPv6Protocol)
		}
		if slices.Index(fams, f) != i {
			return nil, fmt.Errorf("service controller: the provider's LoadBalancerIPFamilies lists %q twice: %v", f, fams)
		}
	}
	return slices.Clone(fams), nil
}

// familyPlan is what a Service's load balancer serves of its IP families.
type familyPlan struct {
	// served are the families the load balancer serves, in the Service's
	// order; nil when the provider declares none (it decides alone).
	served []corev1.IPFamily
	// dropped are the families a PreferDualStack Service asked for and
	// the cloud does not serve.
	dropped []corev1.IPFamily
}

// planFamilies decides the families of svc's load balancer from
// spec.ipFamilies, spec.ipFamilyPolicy and the families the cloud serves
// (nil: not declared, every Service goes to the provider as it is). A
// family set the cloud cannot serve whole, where the policy does not let
// one go, is an error wrapping cloud.ErrIPFamilyNotSupported, naming the
// fields and values.
func planFamilies(svc *corev1.Service, supported []corev1.IPFamily) (familyPlan, error) {
	want := svc.Spec.IPFamilies
	if supported == nil || len(want) == 0 {
		// The API server fills ipFamilies for every Service with a
		// cluster IP; a headless LoadBalancer cannot exist, so an empty
		// list is a cache older than the field: the provider decides.
		return familyPlan{served: slices.Clone(want)}, nil
	}
	var p familyPlan
	for _, f := range want {
		if slices.Contains(supported, f) {
			p.served = append(p.served, f)
		} else {
			p.dropped = append(p.dropped, f)
		}
	}
	policy := policyOf(svc)
	switch {
	case len(p.dropped) == 0:
		return p, nil
	case len(p.served) == 0:
		return familyPlan{}, fmt.Errorf("spec.ipFamilies %v: the cloud's load balancers serve only %v: %w", want, supported, cloud.ErrIPFamilyNotSupported)
	case policy == corev1.IPFamilyPolicyRequireDualStack:
		return familyPlan{}, fmt.Errorf("spec.ipFamilyPolicy %s asks for %v, and the cloud's load balancers serve only %v (PreferDualStack would serve %v): %w",
			policy, want, supported, p.served, cloud.ErrIPFamilyNotSupported)
	}
	return p, nil
}

// forProvider returns the Service as the provider is handed it: svc itself
// when every family it asks for is served, otherwise a copy whose
// spec.ipFamilies are the served ones (and whose policy is SingleStack when
// one is left), so that a provider never sees a family it declared it
// cannot serve.
func (p familyPlan) forProvider(svc *corev1.Service) *corev1.Service {
	if len(p.dropped) == 0 {
		return svc
	}
	out := svc.DeepCopy()
	out.Spec.IPFamilies = slices.Clone(p.served)
	if len(p.served) == 1 {
		single := corev1.IPFamilyPolicySingleStack
		out.Spec.IPFamilyPolicy = &single
	}
	return out
}

// missingFamilies returns the served families that status has no ingress
// IP of. A status with a hostname says nothing of families (the name may
// resolve to either), so it misses none.
func missingFamilies(status *corev1.LoadBalancerStatus, served []corev1.IPFamily) []corev1.IPFamily {
	has := map[corev1.IPFamily]bool{}
	for _, in := range status.Ingress {
		if in.Hostname != "" {
			return nil
		}
		if a, err := netip.ParseAddr(in.IP); err == nil {
			if a.Is4() {
				has[corev1.IPv4Protocol] = true
			} else {
				has[corev1.IPv6Protocol] = true
			}
		}
	}
	var out []corev1.IPFamily
	for _, f := range served {
		if !has[f] {
			out = append(out, f)
		}
	}
	return out
}

// warnFamiliesNotServed says on the Service which of its families its new
// load balancer does not serve: the ones the cloud does not serve, which
// a PreferDualStack Service lets go (Normal: the policy allows it), and
// the ones the provider was handed but published no ingress IP of
// (Warning: the provider did not do what it was asked).
func (c *Controller) warnFamiliesNotServed(svc *corev1.Service, p familyPlan, missing []corev1.IPFamily) {
	if len(p.dropped) > 0 {
		c.event(svc, corev1.EventTypeNormal, ReasonIPFamilyNotServed, actionEnsure,
			"The load balancer serves %v only: the cloud's load balancers do not serve %v (spec.ipFamilyPolicy %s lets it go)",
			p.served, p.dropped, policyOf(svc))
	}
	if len(missing) > 0 {
		c.event(svc, corev1.EventTypeWarning, ReasonIPFamilyNotServed, actionEnsure,
			"The cloud provider published no ingress IP of %v for a Service with spec.ipFamilies %v (spec.ipFamilyPolicy %s)",
			missing, svc.Spec.IPFamilies, policyOf(svc))
	}
}

func policyOf(svc *corev1.Service) corev1.IPFamilyPolicy {
	if svc.Spec.IPFamilyPolicy == nil {
		return corev1.IPFamilyPolicySingleStack
	}
	return *svc.Spec.IPFamilyPolicy
}
