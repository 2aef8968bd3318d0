package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// testServesDeclaredFamilies checks the IPFamilyLister's word: the list
// names known families once each, a SingleStack Service of each declared
// family gets an ingress IP of that family and none of another, and with
// both declared a RequireDualStack Service gets one of each. A status of
// hostnames says nothing of families and passes (the name may resolve to
// either). Each Service's load balancer is deleted afterwards.
func testServesDeclaredFamilies(ctx context.Context, s *suite) error {
	for i, f := range s.families {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			return fmt.Errorf("LoadBalancerIPFamilies()[%d] is %q; want %q or %q (the service controller refuses to start)", i, f, corev1.IPv4Protocol, corev1.IPv6Protocol)
		}
		if slices.Index(s.families, f) != i {
			return fmt.Errorf("LoadBalancerIPFamilies() lists %q twice: %v (the service controller refuses to start)", f, s.families)
		}
	}
	type want struct {
		policy   corev1.IPFamilyPolicy
		families []corev1.IPFamily
	}
	var cases []want
	for _, f := range s.families {
		cases = append(cases, want{corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{f}})
	}
	if len(s.families) == 2 {
		cases = append(cases, want{corev1.IPFamilyPolicyRequireDualStack, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}})
	}
	var errs []error
	for _, c := range cases {
		name := "conformance-" + strings.ToLower(string(c.policy))
		if len(c.families) == 1 {
			name = "conformance-" + strings.ToLower(string(c.families[0]))
		}
		svc := s.otherService(name, "conformance-uid-"+name)
		svc.Spec.IPFamilyPolicy = &c.policy
		svc.Spec.IPFamilies = c.families
		err := servesFamilies(ctx, s, svc)
		if _, derr := retrying(ctx, s.deleteLB(svc)); derr != nil {
			err = errors.Join(err, fmt.Errorf("deleting the load balancer of %s afterwards: %w", svc.Name, derr))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("a %s Service with ipFamilies %v: %w", c.policy, c.families, err))
		}
	}
	return errors.Join(errs...)
}

func servesFamilies(ctx context.Context, s *suite, svc *corev1.Service) error {
	st, err := retrying(ctx, s.ensure(svc))
	if err != nil {
		return fmt.Errorf("EnsureLoadBalancer: %w", err)
	}
	if err := hasIngress(st); err != nil {
		return err
	}
	got := map[corev1.IPFamily][]string{}
	for _, in := range st.Ingress {
		if in.IP == "" {
			// A hostname: its family is the resolver's to say.
			return nil
		}
		a, err := netip.ParseAddr(in.IP)
		if err != nil {
			return fmt.Errorf("ingress IP %q does not parse: %w", in.IP, err)
		}
		f := corev1.IPv6Protocol
		if a.Is4() {
			f = corev1.IPv4Protocol
		}
		got[f] = append(got[f], in.IP)
	}
	for _, f := range svc.Spec.IPFamilies {
		if len(got[f]) == 0 {
			return fmt.Errorf("EnsureLoadBalancer answered %s, with no %s address though the provider declares %s", ingressList(st), f, f)
		}
	}
	for f, ips := range got {
		if !slices.Contains(svc.Spec.IPFamilies, f) {
			return fmt.Errorf("EnsureLoadBalancer answered %s address %v, a family the Service did not ask for (kube-proxy ignores it)", f, ips)
		}
	}
	return nil
}

func ingressList(st *corev1.LoadBalancerStatus) string {
	var parts []string
	for _, in := range st.Ingress {
		parts = append(parts, in.IP+in.Hostname)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
