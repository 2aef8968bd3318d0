package sandbox

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
)

// monitorFixture runs the node monitor on a fake clientset, with listers
// fed from it after every pass (as informers would) and a fake clock.
type monitorFixture struct {
	t      *testing.T
	ctx    context.Context
	kube   *fake.Clientset
	nodes  cache.Indexer
	leases cache.Indexer
	now    time.Time
	m      *nodeMonitor
}

func newMonitorFixture(t *testing.T, node *corev1.Node, lease *coordinationv1.Lease) *monitorFixture {
	_, ctx := ktesting.NewTestContext(t)
	f := &monitorFixture{t: t, ctx: ctx, kube: fake.NewClientset(node, lease), now: time.Unix(1_800_000_000, 0),
		nodes:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		leases: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
	f.m = newNodeMonitor(f.kube, corelisters.NewNodeLister(f.nodes), coordlisters.NewLeaseLister(f.leases).Leases(corev1.NamespaceNodeLease), DefaultNodeMonitorGracePeriod)
	f.m.now = func() time.Time { return f.now }
	f.refresh()
	return f
}

func (f *monitorFixture) refresh() {
	f.t.Helper()
	n, err := f.kube.CoreV1().Nodes().Get(f.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	_ = f.nodes.Update(n)
	l, err := f.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(f.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	_ = f.leases.Update(l)
}

// at runs one pass at t0+offset and returns the node as it then is.
func (f *monitorFixture) at(offset time.Duration, t0 time.Time) *corev1.Node {
	f.t.Helper()
	f.now = t0.Add(offset)
	f.m.pass(f.ctx)
	f.refresh()
	n, _ := f.kube.CoreV1().Nodes().Get(f.ctx, "n1", metav1.GetOptions{})
	return n
}

func (f *monitorFixture) renew(at time.Time) {
	f.t.Helper()
	l, _ := f.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(f.ctx, "n1", metav1.GetOptions{})
	rt := metav1.NewMicroTime(at)
	l.Spec.RenewTime = &rt
	if _, err := f.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(f.ctx, l, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

func taintKeys(n *corev1.Node) map[string]bool {
	out := map[string]bool{}
	for _, t := range n.Spec.Taints {
		out[t.Key+":"+string(t.Effect)] = true
	}
	return out
}

func TestNodeMonitorKeepsUpstreamTimings(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule},
		}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(t0)},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(t0)},
		}}}
	rt := metav1.NewMicroTime(t0)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: corev1.NamespaceNodeLease}, Spec: coordinationv1.LeaseSpec{RenewTime: &rt}}
	f := newMonitorFixture(t, node, lease)

	// A Ready node loses the admission's not-ready taint; others stay.
	n := f.at(0, t0)
	if keys := taintKeys(n); keys["node.kubernetes.io/not-ready:NoSchedule"] || !keys["node.cloudprovider.kubernetes.io/uninitialized:NoSchedule"] {
		t.Fatalf("after the first pass: taints %v", keys)
	}
	// Heartbeats (Lease renewals) keep it Ready past the grace period.
	f.renew(t0.Add(40 * time.Second))
	f.at(45*time.Second, t0)
	if n := f.at(90*time.Second, t0); readyCondition(n).Status != corev1.ConditionTrue {
		t.Fatalf("a node heard from 45s ago is %s", readyCondition(n).Status)
	}
	// Silent for more than 50s since last heard: Unknown and unreachable.
	n = f.at(96*time.Second, t0)
	if c := readyCondition(n); c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status." {
		t.Fatalf("silent node: Ready %+v", c)
	}
	conds := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range n.Status.Conditions {
		conds[c.Type] = c
	}
	if conds[corev1.NodeMemoryPressure].Status != corev1.ConditionUnknown || conds[corev1.NodeDiskPressure].Reason != "NodeStatusNeverUpdated" {
		t.Fatalf("other conditions: %+v", conds)
	}
	if keys := taintKeys(n); !keys["node.kubernetes.io/unreachable:NoSchedule"] || !keys["node.kubernetes.io/unreachable:NoExecute"] {
		t.Fatalf("silent node taints: %v", keys)
	}
	// The kubelet is back (kwok reports Ready): the taints go.
	n.Status.Conditions[0].Status, n.Status.Conditions[0].LastHeartbeatTime = corev1.ConditionTrue, metav1.NewTime(t0.Add(100*time.Second))
	if _, err := f.kube.CoreV1().Nodes().UpdateStatus(f.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	if n := f.at(101*time.Second, t0); taintKeys(n)["node.kubernetes.io/unreachable:NoExecute"] || readyCondition(n).Status != corev1.ConditionTrue {
		t.Fatalf("node back: %v %+v", taintKeys(n), readyCondition(n))
	}
}
