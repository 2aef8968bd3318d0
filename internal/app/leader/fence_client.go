package leader

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// FenceClient returns c with every write checked by check right before it
// is sent: a leader that cannot prove it still holds the lease
// (cloudwrap.Fence.Check) deletes no Node, and changes no Node or Service
// either, since each of those writes steers what the cloud or the cluster
// does next (a taint, a pod CIDR, a finalizer removed after a load
// balancer's deletion, a published VIP). Reads pass: a replica that lost
// the lease may still look.
func FenceClient(c client.Client, check func(ctx context.Context) error) client.Client {
	ww, ok := c.(client.WithWatch)
	if !ok {
		ww = watchless{c}
	}
	g := fenceGuard{c: c, check: check}
	guard, what := g.guard, g.what
	return interceptor.NewClient(ww, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := guard(ctx, "create", what(obj)); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := guard(ctx, "delete", what(obj)); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			if err := guard(ctx, "delete all of", what(obj)); err != nil {
				return err
			}
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := guard(ctx, "update", what(obj)); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := guard(ctx, "patch", what(obj)); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := guard(ctx, "apply", fmt.Sprintf("%T", obj)); err != nil {
				return err
			}
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if err := guard(ctx, "create "+sub+" of", what(obj)); err != nil {
				return err
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := guard(ctx, "update "+sub+" of", what(obj)); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := guard(ctx, "patch "+sub+" of", what(obj)); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if err := guard(ctx, "apply "+sub+" of", fmt.Sprintf("%T", obj)); err != nil {
				return err
			}
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}

// fenceGuard checks the fence before a write and names the refused one.
type fenceGuard struct {
	c     client.Client
	check func(ctx context.Context) error
}

func (g fenceGuard) guard(ctx context.Context, verb, what string) error {
	if err := g.check(ctx); err != nil {
		return fmt.Errorf("%s %s: %w", verb, what, err)
	}
	return nil
}

// what names an object as the refusal does: "Node node-1".
func (g fenceGuard) what(obj client.Object) string {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := g.c.GroupVersionKindFor(obj); err == nil {
		kind = gvk.Kind
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}

// watchless lets a client without Watch go through the interceptor, which
// wraps only a client.WithWatch; the controllers watch through the
// manager's cache, never through their client.
type watchless struct{ client.Client }

var errNoWatch = errors.New("this client does not watch: watch through the manager's cache")

func (watchless) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errNoWatch
}
