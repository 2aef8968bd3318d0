package explain

import (
	"context"

	"github.com/stratus-ccm/stratus/internal/controllerctx"
)

type objectKey struct{}

// WithObject names the object whose work ctx carries, so that the cloud
// calls made under it are recorded for that object.
func WithObject(ctx context.Context, ref Ref) context.Context {
	return context.WithValue(ctx, objectKey{}, ref)
}

// ObjectFrom returns the object ctx names.
func ObjectFrom(ctx context.Context) (Ref, bool) {
	ref, ok := ctx.Value(objectKey{}).(Ref)
	return ref, ok
}

// controllerFrom is the controller ctx names (kit.WithController).
func controllerFrom(ctx context.Context) string { return controllerctx.From(ctx) }
