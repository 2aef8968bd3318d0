package node

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// A Node whose initialization failed during a cloud outage is queued again
// as soon as the cloud answers, not after the backoff it built up; once
// initialized it is not, and neither is one the cloud refused on its own
// account (it keeps its backoff).
func TestWaitingNodesRetriedWhenCloudRecovers(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1"))
	h := newHarness(t, fc, false, newNode("n1"))
	rec := &kittest.Recovery{}
	c, err := New(Deps{Deps: kit.Deps{Client: h.client, Recovery: rec}, Instances: fc}, Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	c.queue.Set(q)
	req := reconcile.Request{NamespacedName: client.ObjectKey{Name: "n1"}}
	c.observe(newNode("n1"), q)
	got, _ := q.Get()
	q.Done(got)
	q.Forget(got)

	fc.SetError("", errors.New("providerID \"aws:///us-east-1a/i-1\" is not this cloud's"))
	if _, err := c.Reconcile(context.Background(), req); err == nil {
		t.Fatal("sync with a refused providerID succeeded")
	}
	rec.Fire()
	if n := q.Len(); n != 0 {
		t.Fatalf("a recovery queued %d items after the Node's own error, want 0 (it keeps its backoff)", n)
	}

	fc.SetError("", kittest.HTTPError(503))
	if _, err := c.Reconcile(context.Background(), req); err == nil {
		t.Fatal("sync during the outage succeeded")
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("queue holds %d items before recovery, want 0", n)
	}
	rec.Fire()
	if n := q.Len(); n != 1 {
		t.Fatalf("queue holds %d items after recovery, want 1 (n1)", n)
	}
	got, _ = q.Get()
	q.Done(got)
	if got != req {
		t.Fatalf("queued %v, want %v", got, req)
	}
	fc.SetError("", nil)
	if _, err := c.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("sync after recovery: %v", err)
	}
	rec.Fire()
	if n := q.Len(); n != 0 {
		t.Fatalf("a recovery after n1 was initialized queued %d items, want 0", n)
	}
}
