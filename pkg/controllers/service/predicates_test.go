package service

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNodeEligible(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*v1.Node)
		want bool
	}{
		{"plain", func(*v1.Node) {}, true},
		{"not ready still counts (KEP-3458)", func(n *v1.Node) {
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
		}, true},
		{"uninitialized still counts, as upstream", func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: v1.TaintEffectNoSchedule}}
		}, true},
		{"exclude label true", func(n *v1.Node) { n.Labels[v1.LabelNodeExcludeBalancers] = "true" }, false},
		{"exclude label false", func(n *v1.Node) { n.Labels[v1.LabelNodeExcludeBalancers] = "false" }, true},
		{"exclude label unparsable excludes", func(n *v1.Node) { n.Labels[v1.LabelNodeExcludeBalancers] = "yes please" }, false},
		{"exclude label empty excludes", func(n *v1.Node) { n.Labels[v1.LabelNodeExcludeBalancers] = "" }, false},
		{"autoscaler taint", func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{{Key: ToBeDeletedTaint, Effect: v1.TaintEffectNoSchedule}}
		}, false},
		{"being deleted", func(n *v1.Node) { n.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeEligible(node("n", tc.mut)); got != tc.want {
				t.Errorf("nodeEligible = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeChangeTriggersSync(t *testing.T) {
	base := node("n")
	for _, tc := range []struct {
		name string
		mut  func(*v1.Node)
		want bool
	}{
		{"heartbeat", func(n *v1.Node) { n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady}} }, false},
		{"providerID set", func(n *v1.Node) { n.Spec.ProviderID = "fake://other" }, true},
		{"excluded", func(n *v1.Node) { n.Labels[v1.LabelNodeExcludeBalancers] = "true" }, true},
		{"autoscaler taint (drains first)", func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{{Key: ToBeDeletedTaint}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.mut(cur)
			if got := nodeChangeTriggersSync(base, cur); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNeedsUpdate(t *testing.T) {
	base := lbService("ns", "web")
	for _, tc := range []struct {
		name string
		mut  func(*v1.Service)
		want bool
	}{
		{"nothing", func(*v1.Service) {}, false},
		{"finalizer only", withFinalizer, false},
		{"status only", func(s *v1.Service) { s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "1.2.3.4"}} }, false},
		{"labels only", func(s *v1.Service) { s.Labels = map[string]string{"a": "b"} }, false},
		{"port", func(s *v1.Service) { s.Spec.Ports[0].Port = 81 }, true},
		{"protocol", func(s *v1.Service) { s.Spec.Ports[0].Protocol = v1.ProtocolUDP }, true},
		{"node port", func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30081 }, true},
		{"source ranges", func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} }, true},
		{"session affinity", func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP }, true},
		{"traffic policy", func(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal }, true},
		{"health check node port", func(s *v1.Service) { s.Spec.HealthCheckNodePort = 32000 }, true},
		{"ip families", func(s *v1.Service) { s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} }, true},
		{"annotation", func(s *v1.Service) { s.Annotations = map[string]string{"x": "y"} }, true},
		{"loadBalancerIP", func(s *v1.Service) { s.Spec.LoadBalancerIP = "1.2.3.4" }, true},
		{"type away", func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeClusterIP }, true},
		{"uid", func(s *v1.Service) { s.UID = "other" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.mut(cur)
			if got := needsUpdate(base, cur, ""); got != tc.want {
				t.Errorf("needsUpdate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWantsLoadBalancer(t *testing.T) {
	cls := func(c string) func(*v1.Service) { return func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(c) } }
	for _, tc := range []struct {
		name  string
		svc   *v1.Service
		class string
		want  bool
	}{
		{"no class, none configured", lbService("a", "b"), "", true},
		{"no class, one configured", lbService("a", "b"), "x", true},
		{"class, none configured", lbService("a", "b", cls("x")), "", false},
		{"class matches", lbService("a", "b", cls("x")), "x", true},
		{"class differs", lbService("a", "b", cls("y")), "x", false},
		{"not a load balancer", lbService("a", "b", func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeClusterIP }), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wantsLoadBalancer(tc.svc, tc.class); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestServiceEventMatters(t *testing.T) {
	old := lbService("ns", "web")
	withFin := old.DeepCopy()
	withFinalizer(withFin)
	if serviceEventMatters(old, withFin, "") {
		t.Error("our own finalizer patch must not trigger a sync")
	}
	if !serviceEventMatters(withFin, old, "") {
		t.Error("a removed finalizer must be put back")
	}
	del := withFin.DeepCopy()
	deleting(time.Now())(del)
	if !serviceEventMatters(withFin, del, "") {
		t.Error("deletion must trigger a sync")
	}
}
