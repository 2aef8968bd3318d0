package leader

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestDeletionCostMarksTheLeadersPod(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "stratus-abc",
		Annotations: map[string]string{"other": "kept"}}})
	d := NewDeletionCost(cs.CoreV1(), "kube-system", "stratus-abc")
	if !d.NeedLeaderElection() {
		t.Fatal("the mark must wait for the Lease")
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods("kube-system").Get(context.Background(), "stratus-abc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Annotations[AnnotationPodDeletionCost]; got != LeaderDeletionCost || pod.Annotations["other"] != "kept" {
		t.Fatalf("annotations %v, want %s=%s and the others kept", pod.Annotations, AnnotationPodDeletionCost, LeaderDeletionCost)
	}
}

// A refusal is final (RBAC or the chart's admission policy would refuse
// again) and does not stop the leader; a transient error is retried.
func TestDeletionCostRefusedOrRetried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		failures  int
		wantCalls int
		marked    bool
	}{
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "stratus-abc", nil), 100, 1, false},
		{"transient", apierrors.NewServiceUnavailable("busy"), 2, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
			calls := 0
			cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= tc.failures {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			d := NewDeletionCost(cs.CoreV1(), "ns", "p")
			d.backoff = wait.Backoff{Duration: time.Millisecond, Steps: 5}
			if err := d.Start(context.Background()); err != nil {
				t.Fatalf("Start: %v, want nil: leading does not depend on the mark", err)
			}
			pod, _ := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if calls != tc.wantCalls || (pod.Annotations[AnnotationPodDeletionCost] != "") != tc.marked {
				t.Fatalf("%d patches, annotations %v; want %d and marked=%t", calls, pod.Annotations, tc.wantCalls, tc.marked)
			}
		})
	}
}

func TestDeletionCostNeedsThePodsName(t *testing.T) {
	cs := fake.NewClientset()
	if d := NewDeletionCost(cs.CoreV1(), "kube-system", ""); d != nil {
		t.Fatal("a marker without the pod's name")
	}
}
