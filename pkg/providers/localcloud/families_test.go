package localcloud_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilptr "k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// ingressFamilies returns the status's IPs and their families, in order.
func ingressFamilies(st *corev1.LoadBalancerStatus) (ips []string, fams []corev1.IPFamily) {
	for _, in := range st.Ingress {
		ips = append(ips, in.IP)
		if netip.MustParseAddr(in.IP).Is4() {
			fams = append(fams, corev1.IPv4Protocol)
		} else {
			fams = append(fams, corev1.IPv6Protocol)
		}
	}
	return ips, fams
}

// TestDualStackLoadBalancers: with `ipFamilies: IPv4,IPv6` in its config
// and a cloud with an IPv6 VIP pool, the provider declares both families
// and publishes one ingress per family of the Service, in the Service's
// order; a family added keeps the other's address, a family removed frees
// its VIP; spec.loadBalancerIP may name the IPv6 VIP.
func TestDualStackLoadBalancers(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, 0, testbed.InstancePool(t), "ipFamilies: IPv4,IPv6\n", netip.MustParsePrefix("fd00:5354:fc:1::/120"))
	lbs, _ := e.cloud.LoadBalancer()
	if got := lbs.(cloud.IPFamilyLister).LoadBalancerIPFamilies(); !slices.Equal(got, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}) {
		t.Fatalf("declared families %v", got)
	}
	nodes := []*corev1.Node{node("n1", "localcloud://"+e.instance(t, "n1").ID)}
	ensure := func(svc *corev1.Service) *corev1.LoadBalancerStatus {
		t.Helper()
		st, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
		if err != nil {
			t.Fatalf("ensure %v: %v", svc.Spec.IPFamilies, err)
		}
		return st
	}
	svc := service(30080, corev1.ProtocolTCP)
	svc.Spec.IPFamilyPolicy = utilptr.To(corev1.IPFamilyPolicyRequireDualStack)
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	dual, fams := ingressFamilies(ensure(svc))
	if !slices.Equal(fams, svc.Spec.IPFamilies) {
		t.Fatalf("ingress %v, want one per family in the Service's order %v", dual, svc.Spec.IPFamilies)
	}
	if !netip.MustParsePrefix("fd00:5354:fc:1::/120").Contains(netip.MustParseAddr(dual[0])) {
		t.Errorf("IPv6 VIP %s is not of the pool", dual[0])
	}

	// Down to IPv4: the IPv4 address stays, the IPv6 VIP is freed.
	svc.Spec.IPFamilyPolicy = utilptr.To(corev1.IPFamilyPolicySingleStack)
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	if got, _ := ingressFamilies(ensure(svc)); !slices.Equal(got, dual[1:]) {
		t.Fatalf("after dropping IPv6: ingress %v, want %v", got, dual[1:])
	}
	// An IPv6-only Service may ask for the freed address.
	other := service(30081, corev1.ProtocolTCP)
	other.Name, other.UID = "v6", "2b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
	other.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	other.Spec.LoadBalancerIP = dual[0]
	if got, fams := ingressFamilies(ensure(other)); !slices.Equal(got, dual[:1]) || fams[0] != corev1.IPv6Protocol {
		t.Fatalf("IPv6-only Service asking for %s: ingress %v", dual[0], got)
	}
	// Back to dual-stack: IPv4 kept, a new IPv6 VIP.
	svc.Spec.IPFamilyPolicy = utilptr.To(corev1.IPFamilyPolicyPreferDualStack)
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	again, fams := ingressFamilies(ensure(svc))
	if again[0] != dual[1] || fams[1] != corev1.IPv6Protocol || again[1] == dual[0] {
		t.Fatalf("back to dual-stack: ingress %v (had %v)", again, dual)
	}
	all, err := e.admin.ListAllLoadBalancers(e.ctx, client.ListOptions{})
	if err != nil || len(all) != 2 {
		t.Fatalf("load balancers: %v %+v", err, all)
	}
}

// TestIPv4ProviderRefusesIPv6: a provider configured for IPv4 (the
// default) refuses an IPv6 Service handed to it anyway (extensions off)
// with cloud.ErrIPFamilyNotSupported, before any cloud call; and a cloud
// without an IPv6 pool refuses a provider configured for IPv6, naming the
// flag to set.
func TestIPv4ProviderRefusesIPv6(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	lbs, _ := e.cloud.LoadBalancer()
	if got := lbs.(cloud.IPFamilyLister).LoadBalancerIPFamilies(); !slices.Equal(got, []corev1.IPFamily{corev1.IPv4Protocol}) {
		t.Fatalf("declared families %v, want IPv4", got)
	}
	svc := service(30080, corev1.ProtocolTCP)
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	before := e.count(t, "CreateLoadBalancer")
	_, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nil)
	if !errors.Is(err, cloud.ErrIPFamilyNotSupported) || !strings.Contains(err.Error(), "spec.ipFamilies [IPv6]") {
		t.Fatalf("ensure of an IPv6 Service: %v", err)
	}
	if n := e.count(t, "CreateLoadBalancer"); n != before {
		t.Errorf("a refused Service made %d create calls", n-before)
	}

	noPool := newEnvWith(t, 0, testbed.InstancePool(t), "ipFamilies: IPv4,IPv6\n", netip.Prefix{})
	lbs, _ = noPool.cloud.LoadBalancer()
	_, err = lbs.EnsureLoadBalancer(noPool.ctx, "kubernetes", svc, nil)
	if err == nil || !strings.Contains(err.Error(), "--vip6-pool") {
		t.Fatalf("ensure on a cloud without an IPv6 pool: %v, want the flag named", err)
	}
}
