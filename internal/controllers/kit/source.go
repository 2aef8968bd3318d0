package kit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// informerRetry is how often Kind asks the cache again for an informer it
// could not get, as controller-runtime's Kind does.
const informerRetry = 10 * time.Second

// Kind is controller-runtime's source.TypedKind, ready the moment its
// handler has seen every existing object. source.TypedKind learns that by
// polling every 100 ms (client-go's WaitForCacheSync), so a controller
// started on a warm cache, as a standby's is when it takes over, waits up
// to 100 ms for nothing before its first reconcile; client-go's
// HasSyncedChecker closes a channel instead. Events reach the handler
// through controller-runtime's own adapter (source.TypedInformer), so
// they are exactly TypedKind's: the initial list's creates flagged, the
// priority queue's defaults applied by the handler.
func Kind[T client.Object, R comparable](c cache.Cache, obj T, h handler.TypedEventHandler[T, R], preds ...predicate.TypedPredicate[T]) source.TypedSyncingSource[R] {
	return &kindSource[T, R]{cache: c, obj: obj, handler: h, preds: preds, synced: make(chan error, 1)}
}

type kindSource[T client.Object, R comparable] struct {
	cache   cache.Cache
	obj     T
	handler handler.TypedEventHandler[T, R]
	preds   []predicate.TypedPredicate[T]
	// synced carries Start's outcome: nil once the handler has seen
	// every existing object.
	synced chan error
}

// Start registers the handler with the object's informer, in the
// background as TypedKind does: the cache may still be starting.
func (k *kindSource[T, R]) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[R]) error {
	if k.handler == nil {
		return errors.New("kind source: no handler")
	}
	go func() { k.synced <- k.register(ctx, q) }()
	return nil
}

func (k *kindSource[T, R]) register(ctx context.Context, q workqueue.TypedRateLimitingInterface[R]) error {
	var inf cache.Informer
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, informerRetry, true, func(ctx context.Context) (bool, error) {
		inf, lastErr = k.cache.GetInformer(ctx, k.obj)
		if lastErr != nil {
			klog.FromContext(ctx).Error(lastErr, "Getting the informer failed; trying again", "source", k.String(), "after", informerRetry)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if lastErr != nil {
			return fmt.Errorf("%s: get informer: %w", k, lastErr)
		}
		return fmt.Errorf("%s: %w", k, err)
	}
	capture := &registrationOf{Informer: inf}
	src := &source.TypedInformer[T, R]{Informer: capture, Handler: k.handler, Predicates: k.preds}
	if err := src.Start(ctx, q); err != nil {
		return fmt.Errorf("%s: add handler: %w", k, err)
	}
	select {
	case <-capture.reg.HasSyncedChecker().Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: handler did not sync: %w", k, ctx.Err())
	}
}

// WaitForSync returns once the handler has seen every existing object.
func (k *kindSource[T, R]) WaitForSync(ctx context.Context) error {
	select {
	case err := <-k.synced:
		return err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil
		}
		return fmt.Errorf("timed out waiting for %s to sync", k)
	}
}

func (k *kindSource[T, R]) String() string { return fmt.Sprintf("kind source: %T", k.obj) }

// registrationOf keeps the registration of the handler added through it,
// which source.TypedInformer does not return.
type registrationOf struct {
	cache.Informer
	reg toolscache.ResourceEventHandlerRegistration
}

func (r *registrationOf) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := r.Informer.AddEventHandlerWithOptions(h, o)
	r.reg = reg
	return reg, err
}
