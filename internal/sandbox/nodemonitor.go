package sandbox

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// Upstream kube-controller-manager v1.37's node-lifecycle defaults
// (pkg/controller/nodelifecycle/config/v1alpha1/defaults.go).
const (
	DefaultNodeMonitorPeriod      = 5 * time.Second
	DefaultNodeMonitorGracePeriod = 50 * time.Second
)

// nodeMonitor does, for the sandbox, the part of upstream's node-lifecycle
// controller a cloud-controller-manager depends on: a node whose kubelet
// has not been heard from (neither its Lease renewed nor its Ready
// condition's heartbeat moved) for the grace period gets its conditions
// set to Unknown ("Kubelet stopped posting node status.") and the
// node.kubernetes.io/unreachable taints; the taints follow the Ready
// condition (none once Ready, as the TaintNodesByCondition admission's
// not-ready taint on a new node goes when kwok reports it Ready).
// As upstream, the clock starts when the monitor first sees a node, and a
// heartbeat counts when it changes, not by its timestamp.
type nodeMonitor struct {
	kube   kubernetes.Interface
	nodes  corelisters.NodeLister
	leases coordlisters.LeaseNamespaceLister
	grace  time.Duration
	now    func() time.Time

	mu     sync.Mutex
	health map[string]*nodeHealth
}

type nodeHealth struct {
	uid       types.UID
	probe     time.Time // when a heartbeat was last observed
	renew     time.Time // the Lease's renewTime then
	heartbeat time.Time // the Ready condition's lastHeartbeatTime then
}

// conditionTaints are the taints upstream's node-lifecycle controller keeps
// in line with the Ready condition (the API server's TaintNodesByCondition
// admission adds not-ready:NoSchedule to every new node; they go once the
// node is Ready).
var conditionTaints = map[corev1.ConditionStatus][]corev1.Taint{
	corev1.ConditionTrue: nil,
	corev1.ConditionFalse: {
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	},
	corev1.ConditionUnknown: {
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
	},
}

func newNodeMonitor(kube kubernetes.Interface, nodes corelisters.NodeLister, leases coordlisters.LeaseNamespaceLister, grace time.Duration) *nodeMonitor {
	return &nodeMonitor{kube: kube, nodes: nodes, leases: leases, grace: grace, now: time.Now, health: map[string]*nodeHealth{}}
}

func (m *nodeMonitor) run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		m.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pass checks every node once.
func (m *nodeMonitor) pass(ctx context.Context) {
	nodes, err := m.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.Name] = true
		if err := m.check(ctx, n); err != nil {
			klog.FromContext(ctx).V(2).Info("Node monitor: update failed; next pass retries", "node", klog.KObj(n), "err", err)
		}
	}
	m.mu.Lock()
	for name := range m.health {
		if !seen[name] {
			delete(m.health, name)
		}
	}
	m.mu.Unlock()
}

// silentTooLong reports whether the node has not been heard from for the grace
// period, updating what was observed of it.
func (m *nodeMonitor) silentTooLong(n *corev1.Node) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.health[n.Name]
	if h == nil || h.uid != n.UID {
		h = &nodeHealth{uid: n.UID, probe: now}
		m.health[n.Name] = h
	}
	if ready := readyCondition(n); ready != nil && ready.LastHeartbeatTime.After(h.heartbeat) {
		h.heartbeat, h.probe = ready.LastHeartbeatTime.Time, now
	}
	if l, err := m.leases.Get(n.Name); err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(h.renew) {
		h.renew, h.probe = l.Spec.RenewTime.Time, now
	}
	return now.After(h.probe.Add(m.grace))
}

func (m *nodeMonitor) check(ctx context.Context, n *corev1.Node) error {
	ready := readyCondition(n)
	if m.silentTooLong(n) && (ready == nil || ready.Status != corev1.ConditionUnknown) {
		klog.FromContext(ctx).Info("Node stopped posting status: marking it Unknown", "node", klog.KObj(n), "gracePeriod", m.grace)
		if err := m.markUnknown(ctx, n.Name); err != nil {
			return err
		}
		return m.setTaints(ctx, n.Name, corev1.ConditionUnknown)
	}
	if ready == nil {
		return nil
	}
	if want := conditionTaints[ready.Status]; !sameConditionTaints(n.Spec.Taints, want) {
		return m.setTaints(ctx, n.Name, ready.Status)
	}
	return nil
}

// markUnknown sets Ready, MemoryPressure, DiskPressure and PIDPressure to
// Unknown, as upstream does (NetworkUnavailable is the route controller's).
func (m *nodeMonitor) markUnknown(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := m.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewTime(m.now())
		changed := false
		for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
			i := slices.IndexFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == t })
			switch {
			case i < 0:
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown,
					Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
					LastHeartbeatTime: n.CreationTimestamp, LastTransitionTime: now})
				changed = true
			case n.Status.Conditions[i].Status != corev1.ConditionUnknown:
				c := &n.Status.Conditions[i]
				c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", now
				changed = true
			}
		}
		if !changed {
			return nil
		}
		_, err = m.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// setTaints replaces the node's condition taints with those of status.
func (m *nodeMonitor) setTaints(ctx context.Context, name string, status corev1.ConditionStatus) error {
	want := conditionTaints[status]
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := m.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sameConditionTaints(n.Spec.Taints, want) {
			return nil
		}
		taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), isConditionTaint)
		now := metav1.NewTime(m.now())
		for _, t := range want {
			if t.Effect == corev1.TaintEffectNoExecute {
				t.TimeAdded = &now
			}
			taints = append(taints, t)
		}
		n.Spec.Taints = taints
		_, err = m.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

func isConditionTaint(t corev1.Taint) bool {
	return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
}

// sameConditionTaints reports whether the condition taints among have are
// exactly want.
func sameConditionTaints(have, want []corev1.Taint) bool {
	n := 0
	for _, t := range have {
		if !isConditionTaint(t) {
			continue
		}
		n++
		if !slices.ContainsFunc(want, func(w corev1.Taint) bool { return w.Key == t.Key && w.Effect == t.Effect }) {
			return false
		}
	}
	return n == len(want)
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
