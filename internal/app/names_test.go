package app

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// The daemon's manager keeps controller-runtime's check that controller
// names are unique in the process, unless Deps asks otherwise (tests that
// run the daemon more than once): a provider's extra controller that takes
// a built-in controller's name is refused.
func TestManagerRefusesADuplicateControllerName(t *testing.T) {
	for _, skip := range []bool{false, true} {
		// controller-runtime remembers names process-wide: one per case.
		name := "duplicate-name-check"
		if skip {
			name += "-skipped"
		}
		mgr, err := newManager(NewOptions(), &rest.Config{Host: "https://127.0.0.1:1"}, nil, nil, skip)
		if err != nil {
			t.Fatal(err)
		}
		add := func() error {
			return builder.TypedControllerManagedBy[struct{}](mgr).
				Named(name).
				WatchesRawSource(source.TypedFunc[struct{}](func(context.Context, workqueue.TypedRateLimitingInterface[struct{}]) error { return nil })).
				Complete(reconcile.TypedFunc[struct{}](func(context.Context, struct{}) (reconcile.Result, error) {
					return reconcile.Result{}, nil
				}))
		}
		if err := add(); err != nil {
			t.Fatalf("skip=%t: first controller: %v", skip, err)
		}
		err = add()
		switch {
		case !skip && (err == nil || !strings.Contains(err.Error(), name)):
			t.Errorf("second controller named %s: %v; want it refused", name, err)
		case skip && err != nil:
			t.Errorf("skip=true: second controller named %s: %v", name, err)
		}
	}
}
