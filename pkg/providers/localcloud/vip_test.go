package localcloud_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// spec.loadBalancerIP is allocated from the VIP pool; an address outside
// the pool, taken, or malformed is refused naming the field and the
// value, and creates nothing.
func TestLoadBalancerIPFromThePool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	a := e.instance(t, "a")
	nodes := []*corev1.Node{node("a", "localcloud://"+a.ID)}
	lbs, _ := e.cloud.LoadBalancer()
	ip := strings.TrimSuffix(e.pools.VIP.Addr().String(), ".0") + ".250"

	svc := service(30080, corev1.ProtocolTCP)
	svc.Spec.LoadBalancerIP = ip
	var st *corev1.LoadBalancerStatus
	var err error
	for st == nil && err == nil || isRetry(err) {
		st, err = lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	}
	if err != nil || len(st.Ingress) != 1 || st.Ingress[0].IP != ip {
		t.Fatalf("asked for %s: status %+v, %v", ip, st, err)
	}

	for i, tc := range []struct{ ip, why string }{
		{ip, "already"},
		{"10.1.2.3", "not a usable address of the VIP pool"},
		{"not-an-ip", "not an IP address"},
		{"2001:db8::1", "an IPv6 address, and spec.ipFamilies [IPv4] has no IPv6"},
		{"::ffff:10.1.2.3", "not an IP address"},
	} {
		other := service(30081, corev1.ProtocolTCP)
		other.Name, other.UID = "other", types.UID(fmt.Sprintf("1b1c2d3e-4f50-6172-8394-a5b6c7d8e9f%d", i))
		other.Spec.LoadBalancerIP = tc.ip
		_, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", other, nodes)
		if err == nil || !strings.Contains(err.Error(), `spec.loadBalancerIP "`+tc.ip+`"`) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("loadBalancerIP %s: got %v; want an error naming the field, the value and %q", tc.ip, err, tc.why)
		}
	}
	all, err := e.admin.ListAllLoadBalancers(e.ctx, client.ListOptions{})
	if err != nil || len(all) != 1 {
		t.Fatalf("refused requests created load balancers: %v %+v", err, all)
	}

	// The VIP of an existing load balancer cannot change: say so.
	svc.Spec.LoadBalancerIP = strings.TrimSuffix(ip, ".250") + ".251"
	if _, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err == nil || !strings.Contains(err.Error(), "spec.loadBalancerIP") {
		t.Errorf("changed loadBalancerIP: got %v, want an error naming the field", err)
	}
}
