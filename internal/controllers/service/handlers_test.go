package service

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// At a start or a takeover, the Services of the initial list that still
// wait for the cloud (no address, or a deletion) are handed out before
// those whose load balancer already serves, whatever order the informer
// replays them in; a Service created later is not held back either.
func TestWaitingServicesFirstAtTakeover(t *testing.T) {
	t.Parallel()
	c := &Controller{}
	h := c.serviceHandler()
	q := priorityqueue.New[key]("test-waiting-first")
	defer q.ShutDown()
	published := func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	}
	deleting := func(s *corev1.Service) {
		s.Finalizers = []string{servicehelper.LoadBalancerCleanupFinalizer}
		s.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		published(s)
	}
	ctx := context.Background()
	for _, s := range []*corev1.Service{
		lbService("ns", "served-1", published), lbService("ns", "new-1"), lbService("ns", "served-2", published),
		lbService("ns", "gone", deleting), lbService("ns", "served-3", published), lbService("ns", "new-2"),
	} {
		h.Create(ctx, event.TypedCreateEvent[*corev1.Service]{Object: s, IsInInitialList: true}, q)
	}
	h.Create(ctx, event.TypedCreateEvent[*corev1.Service]{Object: lbService("ns", "later")}, q)
	// The queue takes adds asynchronously: wait until it holds them all.
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() < 7 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var order []string
	for range 7 {
		k, _ := q.Get()
		order = append(order, k.Service.Name)
		q.Done(k)
	}
	waiting := map[string]bool{"new-1": true, "new-2": true, "gone": true, "later": true}
	for i, name := range order {
		if waiting[name] != (i < len(waiting)) {
			t.Fatalf("handed out %v: the Services waiting for the cloud (%v) must come before those that serve", order, waiting)
		}
	}
}
