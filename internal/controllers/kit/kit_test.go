package kit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
)

func TestRetryLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name    string
		err     error
		ok      bool
		requeue time.Duration
	}{
		{"nil", nil, false, 0},
		{"plain error", errors.New("boom"), false, 0},
		{"retry after 3s", cloudproviderapi.NewRetryError("provisioning", 3*time.Second), true, 3 * time.Second},
		{"wrapped", fmt.Errorf("ensure lb: %w", cloudproviderapi.NewRetryError("provisioning", time.Second)), true, time.Second},
		{"no delay takes the minimum", cloudproviderapi.NewRetryError("now", 0), true, kit.MinRetryAfter},
		{"a tiny delay takes the minimum", cloudproviderapi.NewRetryError("soon", time.Millisecond), true, kit.MinRetryAfter},
	}
	for _, c := range cases {
		res, ok := kit.RetryLater(ctx, c.err)
		if ok != c.ok || res.RequeueAfter != c.requeue {
			t.Errorf("%s: RetryLater = %v, %t; want RequeueAfter %v, %t", c.name, res, ok, c.requeue, c.ok)
		}
	}
}

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
