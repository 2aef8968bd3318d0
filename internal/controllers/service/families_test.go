package service

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

var (
	v4   = corev1.IPv4Protocol
	v6   = corev1.IPv6Protocol
	both = []corev1.IPFamily{v4, v6}
)

func families(policy corev1.IPFamilyPolicy, fams ...corev1.IPFamily) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = ptr.To(policy)
		s.Spec.IPFamilies = fams
	}
}

type familyList []corev1.IPFamily

func (l familyList) LoadBalancerIPFamilies() []corev1.IPFamily { return l }

func TestPlanFamilies(t *testing.T) {
	t.Parallel()
	single, prefer, require := corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack
	for name, tc := range map[string]struct {
		policy             corev1.IPFamilyPolicy
		want, supported    []corev1.IPFamily
		served, dropped    []corev1.IPFamily
		refused, errSays   bool
		says               string
		handedPolicyChange bool
	}{
		"undeclared: everything goes to the provider": {policy: require, want: both, supported: nil, served: both},
		"IPv4 on IPv4":                 {policy: single, want: []corev1.IPFamily{v4}, supported: []corev1.IPFamily{v4}, served: []corev1.IPFamily{v4}},
		"IPv6 on IPv4":                 {policy: single, want: []corev1.IPFamily{v6}, supported: []corev1.IPFamily{v4}, refused: true, says: "spec.ipFamilies [IPv6]: the cloud's load balancers serve only [IPv4]"},
		"IPv6 on both":                 {policy: single, want: []corev1.IPFamily{v6}, supported: both, served: []corev1.IPFamily{v6}},
		"prefer dual on IPv4":          {policy: prefer, want: both, supported: []corev1.IPFamily{v4}, served: []corev1.IPFamily{v4}, dropped: []corev1.IPFamily{v6}, handedPolicyChange: true},
		"prefer dual, IPv6 first":      {policy: prefer, want: []corev1.IPFamily{v6, v4}, supported: []corev1.IPFamily{v4}, served: []corev1.IPFamily{v4}, dropped: []corev1.IPFamily{v6}, handedPolicyChange: true},
		"prefer dual on IPv6":          {policy: prefer, want: both, supported: []corev1.IPFamily{v6}, served: []corev1.IPFamily{v6}, dropped: []corev1.IPFamily{v4}, handedPolicyChange: true},
		"require dual on IPv4":         {policy: require, want: both, supported: []corev1.IPFamily{v4}, refused: true, says: "spec.ipFamilyPolicy RequireDualStack asks for [IPv4 IPv6], and the cloud's load balancers serve only [IPv4]"},
		"require dual on both":         {policy: require, want: both, supported: both, served: both},
		"prefer dual, single family":   {policy: prefer, want: []corev1.IPFamily{v4}, supported: both, served: []corev1.IPFamily{v4}},
		"no families (an old cache)":   {policy: single, want: nil, supported: []corev1.IPFamily{v4}, served: nil},
		"require dual on IPv6, v6 1st": {policy: require, want: []corev1.IPFamily{v6, v4}, supported: []corev1.IPFamily{v6}, refused: true, says: "RequireDualStack"},
	} {
		t.Run(name, func(t *testing.T) {
			svc := lbService("ns", "web", families(tc.policy, tc.want...))
			p, err := planFamilies(svc, tc.supported)
			if tc.refused {
				if !errors.Is(err, cloud.ErrIPFamilyNotSupported) || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("planFamilies = %+v, %v; want a refusal wrapping ErrIPFamilyNotSupported saying %q", p, err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.served, tc.served) || !slices.Equal(p.dropped, tc.dropped) {
				t.Errorf("served %v, dropped %v; want %v, %v", p.served, p.dropped, tc.served, tc.dropped)
			}
			handed := p.forProvider(svc)
			if !slices.Equal(handed.Spec.IPFamilies, nonNil(tc.served, tc.want)) {
				t.Errorf("the provider is handed families %v, want %v", handed.Spec.IPFamilies, tc.served)
			}
			if tc.handedPolicyChange != (handed != svc) {
				t.Errorf("handed a copy: %v, want %v", handed != svc, tc.handedPolicyChange)
			}
			if tc.handedPolicyChange && *handed.Spec.IPFamilyPolicy != single {
				t.Errorf("handed policy %s, want SingleStack for one family", *handed.Spec.IPFamilyPolicy)
			}
			if !slices.Equal(svc.Spec.IPFamilies, tc.want) {
				t.Errorf("the Service itself changed: %v", svc.Spec.IPFamilies)
			}
		})
	}
}

func nonNil(a, b []corev1.IPFamily) []corev1.IPFamily {
	if a == nil {
		return b
	}
	return a
}

func TestDeclaredFamilies(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		list familyList
		want []corev1.IPFamily
		says string
	}{
		"none":      {list: nil},
		"IPv4":      {list: familyList{v4}, want: []corev1.IPFamily{v4}},
		"both":      {list: familyList{v6, v4}, want: []corev1.IPFamily{v6, v4}},
		"unknown":   {list: familyList{v4, "IPv5"}, says: `LoadBalancerIPFamilies[1] is "IPv5"`},
		"lowercase": {list: familyList{"ipv4"}, says: `LoadBalancerIPFamilies[0] is "ipv4"`},
		"twice":     {list: familyList{v4, v4}, says: `lists "IPv4" twice`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := declaredFamilies(tc.list)
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("declaredFamilies = %v, %v; want an error saying %q", got, err, tc.says)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("declaredFamilies = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if got, err := declaredFamilies(nil); got != nil || err != nil {
		t.Errorf("no lister: %v, %v", got, err)
	}
}

func TestMissingFamilies(t *testing.T) {
	t.Parallel()
	st := func(ips ...string) *corev1.LoadBalancerStatus {
		s := &corev1.LoadBalancerStatus{}
		for _, ip := range ips {
			if _, err := netip.ParseAddr(ip); err == nil {
				s.Ingress = append(s.Ingress, corev1.LoadBalancerIngress{IP: ip})
			} else {
				s.Ingress = append(s.Ingress, corev1.LoadBalancerIngress{Hostname: ip})
			}
		}
		return s
	}
	for name, tc := range map[string]struct {
		status *corev1.LoadBalancerStatus
		served []corev1.IPFamily
		want   []corev1.IPFamily
	}{
		"both there":        {status: st("192.0.2.1", "2001:db8::1"), served: both},
		"IPv6 missing":      {status: st("192.0.2.1"), served: both, want: []corev1.IPFamily{v6}},
		"IPv4 missing":      {status: st("2001:db8::1"), served: both, want: []corev1.IPFamily{v4}},
		"a hostname":        {status: st("lb.example.com"), served: both},
		"nothing asked":     {status: st("192.0.2.1"), served: nil},
		"wrong family":      {status: st("2001:db8::1"), served: []corev1.IPFamily{v4}, want: []corev1.IPFamily{v4}},
		"no ingress at all": {status: st(), served: []corev1.IPFamily{v6}, want: []corev1.IPFamily{v6}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := missingFamilies(tc.status, tc.served); !slices.Equal(got, tc.want) {
				t.Errorf("missingFamilies = %v, want %v", got, tc.want)
			}
		})
	}
}

// familyHarness is a harness whose cloud serves the given families and
// declares them.
func familyHarness(t *testing.T, served []corev1.IPFamily, svc *corev1.Service) *harness {
	t.Helper()
	h := newHarness(t, Config{}, svc, node("n1"))
	h.lb.IPFamilies = served
	fams, err := declaredFamilies(h.lb)
	if err != nil {
		t.Fatal(err)
	}
	h.c.families = fams
	return h
}

func ingressIPs(svc *corev1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		out = append(out, in.IP)
	}
	return out
}

// A RequireDualStack Service on an IPv4-only cloud is refused before any
// cloud call: no load balancer, the condition and a warning naming the
// policy; changed to PreferDualStack it is served on IPv4, the provider is
// handed IPv4 only, and the Service is told IPv6 is not served.
func TestRequireDualStackRefusedOnAnIPv4Cloud(t *testing.T) {
	t.Parallel()
	h := familyHarness(t, []corev1.IPFamily{v4}, lbService("ns", "web", families(corev1.IPFamilyPolicyRequireDualStack, v4, v6)))
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	if _, err := h.c.Reconcile(ctx, k); !errors.Is(err, cloud.ErrIPFamilyNotSupported) {
		t.Fatalf("reconcile = %v, want ErrIPFamilyNotSupported", err)
	}
	if n := h.count("EnsureLoadBalancer"); n != 0 {
		t.Errorf("EnsureLoadBalancer called %d times for a refused Service", n)
	}
	svc := h.service("ns", "web")
	wantCondition(t, svc, ConditionServing, metav1.ConditionFalse, ReasonIPFamilyNotSupported, "RequireDualStack", "serve only [IPv4]")
	if evs := h.events(); !hasEvent(evs, "Warning IPFamilyNotSupported") {
		t.Errorf("events = %v, want an IPFamilyNotSupported warning", evs)
	}
	if _, ok := h.balancer("ns/web"); ok || len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Fatalf("a refused Service got a load balancer or an ingress: %+v", svc.Status.LoadBalancer)
	}

	svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
	h.update(svc)
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	svc = h.service("ns", "web")
	b, _ := h.balancer("ns/web")
	if !slices.Equal(b.Families, []corev1.IPFamily{v4}) {
		t.Errorf("the provider was handed families %v, want [IPv4]", b.Families)
	}
	if got := ingressIPs(svc); len(got) != 1 || got[0] != h.vip("ns/web") {
		t.Errorf("ingress %v, want the IPv4 address alone", got)
	}
	wantCondition(t, svc, ConditionServing, metav1.ConditionTrue, ReasonEnsuredLoadBalancer, "does not serve [IPv6]")
	if evs := h.events(); !hasEvent(evs, "Normal IPFamilyNotServed") {
		t.Errorf("events = %v, want IPFamilyNotServed", evs)
	}
}

// On a dual-stack cloud a Service moves from IPv4 to dual-stack and back:
// one ingress per family, the IPv4 address kept throughout.
func TestFamilyChangesOnADualStackCloud(t *testing.T) {
	t.Parallel()
	h := familyHarness(t, both, lbService("ns", "web", families(corev1.IPFamilyPolicySingleStack, v4)))
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	step := func(policy corev1.IPFamilyPolicy, fams []corev1.IPFamily, want ...corev1.IPFamily) []string {
		t.Helper()
		svc := h.service("ns", "web")
		svc.Spec.IPFamilyPolicy, svc.Spec.IPFamilies = ptr.To(policy), fams
		h.update(svc)
		if _, err := h.c.Reconcile(ctx, k); err != nil {
			t.Fatal(err)
		}
		svc = h.service("ns", "web")
		ips := ingressIPs(svc)
		var got []corev1.IPFamily
		for _, ip := range ips {
			if netip.MustParseAddr(ip).Is4() {
				got = append(got, v4)
			} else {
				got = append(got, v6)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s %v: ingress %v, want one per family of %v", policy, fams, ips, want)
		}
		wantCondition(t, svc, ConditionServing, metav1.ConditionTrue, ReasonEnsuredLoadBalancer)
		return ips
	}
	first := step(corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{v4}, v4)
	dual := step(corev1.IPFamilyPolicyRequireDualStack, both, v4, v6)
	if dual[0] != first[0] {
		t.Errorf("the IPv4 address changed from %s to %s when IPv6 was added", first[0], dual[0])
	}
	back := step(corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{v4}, v4)
	if back[0] != first[0] {
		t.Errorf("the IPv4 address changed from %s to %s when IPv6 was removed", first[0], back[0])
	}
	if n := h.count("EnsureLoadBalancer"); n != 3 {
		t.Errorf("EnsureLoadBalancer called %d times, want one per change (3)", n)
	}
}

// A serving IPv4 Service changed to RequireDualStack on an IPv4-only cloud
// keeps its load balancer as it is, says the new spec is not applied, and
// keeps its nodes current.
func TestRefusedFamilyChangeKeepsServing(t *testing.T) {
	t.Parallel()
	h := familyHarness(t, []corev1.IPFamily{v4}, lbService("ns", "web", families(corev1.IPFamilyPolicySingleStack, v4)))
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	if _, err := h.c.Reconcile(ctx, k); err != nil {
		t.Fatal(err)
	}
	vip := h.vip("ns/web")
	svc := h.service("ns", "web")
	svc.Spec.IPFamilyPolicy, svc.Spec.IPFamilies = ptr.To(corev1.IPFamilyPolicyRequireDualStack), both
	h.update(svc)
	h.c.nodes.upsert(node("n2"))
	h.events()
	if _, err := h.c.Reconcile(ctx, k); !errors.Is(err, cloud.ErrIPFamilyNotSupported) {
		t.Fatalf("reconcile = %v, want ErrIPFamilyNotSupported", err)
	}
	svc = h.service("ns", "web")
	wantCondition(t, svc, ConditionServing, metav1.ConditionTrue, ReasonServingPreviousSpec, vip, "RequireDualStack")
	if got := ingressIPs(svc); len(got) != 1 || got[0] != vip {
		t.Errorf("ingress %v, want %s kept", got, vip)
	}
	b, _ := h.balancer("ns/web")
	if !slices.Equal(b.Hosts, []string{"n1", "n2"}) || !slices.Equal(b.Families, []corev1.IPFamily{v4}) {
		t.Errorf("load balancer hosts %v families %v; want its nodes kept current and its families as before", b.Hosts, b.Families)
	}
	if evs := h.events(); !hasEvent(evs, "Warning IPFamilyNotSupported") || !hasEvent(evs, "Warning "+ReasonSpecNotApplied) {
		t.Errorf("events = %v, want IPFamilyNotSupported and %s", evs, ReasonSpecNotApplied)
	}
}

// A provider that declares no families is handed every Service as it is,
// as upstream's controller does; a status without an address of a family
// the Service asked for is said in a warning.
func TestUndeclaredFamiliesGoToTheProvider(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web", families(corev1.IPFamilyPolicyRequireDualStack, v4, v6)), node("n1"))
	if err := h.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	b, _ := h.balancer("ns/web")
	if !slices.Equal(b.Families, both) {
		t.Errorf("the provider was handed %v, want the Service's %v", b.Families, both)
	}
	evs := h.events()
	if !hasEvent(evs, "Warning IPFamilyNotServed") {
		t.Fatalf("events = %v, want a warning that IPv6 has no ingress", evs)
	}
	for _, e := range evs {
		if strings.HasPrefix(e, "Warning IPFamilyNotServed") && !strings.Contains(e, "[IPv6]") {
			t.Errorf("the warning does not name IPv6: %s", e)
		}
	}
	wantCondition(t, h.service("ns", "web"), ConditionServing, metav1.ConditionTrue, ReasonEnsuredLoadBalancer, "does not serve [IPv6]")
}

// A provider that decides per Service and refuses with the sentinel gets
// the same condition.
func TestProviderRefusesAFamily(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web", families(corev1.IPFamilyPolicySingleStack, v6)), node("n1"))
	h.lb.FailNext("EnsureLoadBalancer", errors.Join(errors.New("subnet has no IPv6 range"), cloud.ErrIPFamilyNotSupported))
	if _, err := h.c.Reconcile(context.Background(), key{Service: nn("ns/web")}); err == nil {
		t.Fatal("no error")
	}
	wantCondition(t, h.service("ns", "web"), ConditionServing, metav1.ConditionFalse, ReasonIPFamilyNotSupported, "no IPv6 range")
	if evs := h.events(); !hasEvent(evs, "Warning IPFamilyNotSupported") {
		t.Errorf("events = %v", evs)
	}
}
