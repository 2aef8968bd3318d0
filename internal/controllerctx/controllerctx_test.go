package controllerctx_test

import (
	"context"
	"testing"

	"github.com/stratus-ccm/stratus/internal/controllerctx"
)

func TestFromReadsWhatWithSet(t *testing.T) {
	t.Parallel()
	if got := controllerctx.From(context.Background()); got != "" {
		t.Errorf("From(no name) = %q, want empty", got)
	}
	ctx := controllerctx.With(context.Background(), "cloud-node-controller")
	if got := controllerctx.From(controllerctx.With(ctx, "service-lb-controller")); got != "service-lb-controller" {
		t.Errorf("From = %q, want the innermost name", got)
	}
	if got := controllerctx.From(ctx); got != "cloud-node-controller" {
		t.Errorf("From = %q, want cloud-node-controller", got)
	}
}
