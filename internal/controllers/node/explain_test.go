package node

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/explain"
)

// A Node whose instance the cloud does not know is explained with the
// failed attempt and its retry; once the Node is deleted, a sync that
// finds it gone does not bring its explain record back.
func TestExplainRecordOfADeletedNodeStaysDropped(t *testing.T) {
	t.Parallel()
	fc := newFakeCloud()
	h := newHarness(t, fc, false, newNode("ghost"))
	store := explain.NewStore()
	c, err := New(Deps{Client: h.client, Instances: fc, Explain: store}, Config{Workers: 1})
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
