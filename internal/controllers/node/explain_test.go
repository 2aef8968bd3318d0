package node

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
	"github.com/stratus-ccm/stratus/internal/explain"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// A Node whose instance the cloud does not know is explained with the
// failed attempt and its retry; once the Node is deleted, a sync that
// finds it gone does not bring its explain record back.
func TestExplainRecordOfADeletedNodeStaysDropped(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New()
	h := newHarness(t, fc, false, newNode("ghost"))
	store := explain.NewStore()
	c, err := New(Deps{Deps: kit.Deps{Client: h.client, Explain: store}, Instances: fc}, Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: client.ObjectKey{Name: "ghost"}}
	if _, err := c.Reconcile(ctx, req); err == nil {
		t.Fatal("initializing a Node the cloud does not know succeeded")
	}
	ex := store.Explain(ctx, nodeRef("ghost"))
	if len(ex.Syncs) != 1 || ex.Syncs[0].Result != explain.ResultError || ex.Syncs[0].NextRetry == nil {
		t.Fatalf("the unknown instance's Node: %+v; want a failed attempt and a retry", ex.Syncs)
	}
	if err := h.client.Delete(ctx, h.node(t, "ghost")); err != nil {
		t.Fatal(err)
	}
	store.Forget(nodeRef("ghost")) // as the delete handler does
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if ex := store.Explain(ctx, nodeRef("ghost")); ex.Known || store.Len() != 0 {
		t.Errorf("the deleted Node is explained again: %+v", ex)
	}
}

// For the nth failed initialization in a row, the next retry explain
// quotes is the delay the work queue then takes when the error comes back
// to it (controller-runtime's AddRateLimited), up to the cap and past it.
func TestExplainQuotesTheQueuesBackoff(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New()
	h := newHarness(t, fc, false, newNode("ghost"))
	store := explain.NewStore()
	c, err := New(Deps{Deps: kit.Deps{Client: h.client, Explain: store}, Instances: fc},
		Config{Workers: 1, BaseBackoff: 250 * time.Millisecond, MaxBackoff: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rec := &kittest.RecordingLimiter[reconcile.Request]{TypedRateLimiter: c.limiter}
	q := workqueue.NewTypedRateLimitingQueue[reconcile.Request](rec)
	defer q.ShutDown()
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: client.ObjectKey{Name: "ghost"}}
	for n := range 8 {
		if _, err := c.Reconcile(ctx, req); err == nil {
			t.Fatalf("failure %d: initializing a Node the cloud does not know succeeded", n)
		}
		q.AddRateLimited(req)
		s := store.Explain(ctx, nodeRef("ghost")).Syncs[0]
		if s.NextRetry == nil || s.NextRetry.Sub(s.Time) != rec.Last {
			t.Errorf("failure %d: explain quotes the next retry at %v after %v; the queue waits %v", n, s.NextRetry, s.Time, rec.Last)
		}
	}
	if rec.Last != 4*time.Second {
		t.Errorf("after 8 failures the queue waits %v, want the 4s cap", rec.Last)
	}
}
