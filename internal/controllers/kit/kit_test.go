package kit_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
)

func TestRecorderNilDropsEvents(t *testing.T) {
	t.Parallel()
	r := kit.Recorder(nil)
	if r == nil {
		t.Fatal("Recorder(nil) is nil; controllers call it without checking")
	}
	r.Eventf(&corev1.Node{}, nil, corev1.EventTypeNormal, "Reason", "Action", "note %d", 1) // must not panic
}

func TestQueueBeforeAndAfterStart(t *testing.T) {
	t.Parallel()
	var q kit.Queue[string]
	if q.Add("early") {
		t.Error("Add before the controller started reported a queue")
	}
	if _, ok := q.Get(); ok {
		t.Error("Get before the controller started reported a queue")
	}
	wq := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer wq.ShutDown()
	if err := q.Source("first").Start(context.Background(), wq); err != nil {
		t.Fatal(err)
	}
	if !q.Add("later") {
		t.Error("Add after start reported no queue")
	}
	if n := wq.Len(); n != 2 {
		t.Errorf("queue holds %d items, want 2 (the first pass and the later one)", n)
	}
}

func TestOnRecoveredWithoutNotifier(t *testing.T) {
	t.Parallel()
	kit.OnRecovered(nil, func() { t.Error("called without a notifier") })
	r := &kittest.Recovery{}
	called := 0
	kit.OnRecovered(r, func() { called++ })
	r.Fire()
	if called != 1 {
		t.Errorf("called %d times after one recovery, want 1", called)
	}
}
