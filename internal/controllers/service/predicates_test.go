package service

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNodeEligible(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mut  func(*corev1.Node)
		want bool
	}{
		{"plain", func(*corev1.Node) {}, true},
		{"not ready still counts (KEP-3458)", func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
		}, true},
		{"uninitialized still counts, as upstream", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"exclude label true", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" }, false},
		{"exclude label false", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "false" }, true},
		{"exclude label unparsable excludes", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "yes please" }, false},
		{"exclude label empty excludes", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "" }, false},
		{"autoscaler taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
		}, false},
		{"being deleted", func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeEligible(node("n", tc.mut)); got != tc.want {
				t.Errorf("nodeEligible = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeChangeTriggersSync(t *testing.T) {
	t.Parallel()
	base := node("n")
	for _, tc := range []struct {
		name string
		mut  func(*corev1.Node)
		want bool
	}{
		{"heartbeat", func(n *corev1.Node) { n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady}} }, false},
		{"providerID set", func(n *corev1.Node) { n.Spec.ProviderID = "fake://other" }, true},
		{"excluded", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" }, true},
		{"autoscaler taint (drains first)", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: ToBeDeletedTaint}}
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
	t.Parallel()
	base := lbService("ns", "web")
	for _, tc := range []struct {
		name string
		mut  func(*corev1.Service)
		want bool
	}{
		{"nothing", func(*corev1.Service) {}, false},
		{"finalizer only", withFinalizer, false},
		{"status only", func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}} }, false},
		{"labels only", func(s *corev1.Service) { s.Labels = map[string]string{"a": "b"} }, false},
		{"port", func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }, true},
		{"protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = corev1.ProtocolUDP }, true},
		{"node port", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30081 }, true},
		{"source ranges", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} }, true},
		{"session affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, true},
		{"traffic policy", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }, true},
		{"health check node port", func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32000 }, true},
		{"ip families", func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		}, true},
		{"ip family policy", func(s *corev1.Service) {
			p := corev1.IPFamilyPolicyRequireDualStack
			s.Spec.IPFamilyPolicy = &p
		}, true},
		{"ip family policy SingleStack, as unset", func(s *corev1.Service) {
			p := corev1.IPFamilyPolicySingleStack
			s.Spec.IPFamilyPolicy = &p
		}, false},
		{"annotation", func(s *corev1.Service) { s.Annotations = map[string]string{"x": "y"} }, true},
		{"loadBalancerIP", func(s *corev1.Service) { s.Spec.LoadBalancerIP = "1.2.3.4" }, true},
		{"type away", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }, true},
		{"uid", func(s *corev1.Service) { s.UID = "other" }, true},
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
	t.Parallel()
	cls := func(c string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To(c) }
	}
	for _, tc := range []struct {
		name  string
		svc   *corev1.Service
		class string
		want  bool
	}{
		{"no class, none configured", lbService("a", "b"), "", true},
		{"no class, one configured", lbService("a", "b"), "x", true},
		{"class, none configured", lbService("a", "b", cls("x")), "", false},
		{"class matches", lbService("a", "b", cls("x")), "x", true},
		{"class differs", lbService("a", "b", cls("y")), "x", false},
		{"not a load balancer", lbService("a", "b", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wantsLoadBalancer(tc.svc, tc.class); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestServiceEventMatters(t *testing.T) {
	t.Parallel()
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
