package observe

import "context"

// UnknownController names the writer of a change when nothing tells which
// controller made it: an honest "unknown" rather than a guess.
const UnknownController = "unknown"

type controllerKey struct{}

// WithController returns a copy of ctx that names the controller whose work
// it carries. Each controller sets it once where its work starts (a
// reconcile, a periodic pass), so that everything below, the API client's
// transport and the cloud's observe mode, tells which controller a write
// or a refused cloud call belongs to: the controllers share one API client
// and one cloud, and neither can tell them apart otherwise.
func WithController(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, controllerKey{}, name)
}

// ControllerFrom returns the controller name ctx carries, or "" when none
// was set.
func ControllerFrom(ctx context.Context) string {
	name, _ := ctx.Value(controllerKey{}).(string)
	return name
}
