// Package controllerctx carries in a context the name of the controller
// whose work it is. Each controller sets it once where its work starts (a
// reconcile, a periodic pass; kit.WithController), and the code below that
// cannot otherwise tell the controllers apart reads it: observe mode's API
// transport and cloud decorator, to say who would have written what, and
// explain, to file a cloud call under the controller that made it. It is a
// package of its own so that those readers share the key without
// depending on one another.
package controllerctx

import "context"

type key struct{}

// With returns a copy of ctx that names the controller whose work it
// carries. The controllers share one API client and one cloud, so the
// name travels with the call rather than with the client.
func With(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, key{}, name)
}

// From returns the controller name ctx carries, or "" when none was set.
func From(ctx context.Context) string {
	name, _ := ctx.Value(key{}).(string)
	return name
}
