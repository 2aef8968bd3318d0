package app

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/app/testdata/sixth"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
)

// TestSixthControllerIsOneEntry adds a trivial controller the way a
// maintainer would, with its own package and one table entry, and checks
// that everything which depends on the set of controllers follows: the
// --controllers vocabulary and its aliases, the informers every replica
// warms, leader migration's names, the ServiceAccount, and the start
// function (TestSixthControllerGetsChartRBAC: the chart's RBAC).
func TestSixthControllerIsOneEntry(t *testing.T) {
	t.Parallel()
	c := &sixth.Controller{}
	entry := sixthEntry(c)
	table := append(builtinControllers(), entry)

	all, err := options.ResolveControllers([]string{"*"}, vocabulary(table))
	if err != nil || all[len(all)-1] != sixth.ControllerName {
		t.Errorf("'*' = %v, %v; want every controller, the sixth last", all, err)
	}
	if got, err := options.ResolveControllers([]string{"*", "-sixth"}, vocabulary(table)); err != nil || slices.Contains(got, sixth.ControllerName) {
		t.Errorf("'*,-sixth' = %v, %v; want the alias to disable it", got, err)
	}
	if got := kindsFor([]string{sixth.ControllerName}, table); len(got) != 1 || !isKind[*corev1.ConfigMap](got[0]) {
		t.Errorf("kinds warmed for the sixth = %v, want ConfigMap", got)
	}
	if got := kindsFor(options.Names(vocabulary(builtinControllers())), table); len(got) != 2 {
		t.Errorf("kinds warmed for the built-in five = %v, want Node and Service only", got)
	}
	if got := options.MigrationNames(vocabulary(table)); !slices.Contains(got, sixth.ControllerName) {
		t.Errorf("migration names %v lack the sixth", got)
	}
	if _, ok := starters(table)[sixth.ControllerName]; !ok {
		t.Error("the sixth has no start function")
	}
	if got := table[len(table)-1].account(); got != "sixth-counter" {
		t.Errorf("the sixth runs as %s, want its entry's ServiceAccount", got)
	}
	if got := options.Aliases(vocabulary(table)); got["sixth"] != sixth.ControllerName {
		t.Errorf("aliases %v lack the sixth's", got)
	}
	kittest.RequireWatches(t, entry.watches(), func(ctx context.Context, mgr manager.Manager) error {
		started, reason, err := starters(table)[sixth.ControllerName](ctx, ControllerContext{Manager: mgr})
		if !started {
			t.Errorf("not started: %s", reason)
		}
		return err
	})
}

// sixthEntry is the sixth controller's one table entry: its names, the
// ServiceAccount it runs as and what that may do (which the chart renders:
// TestSixthControllerGetsChartRBAC), the kinds it watches, and its start,
// which counts into c.
func sixthEntry(c *sixth.Controller) controllerEntry {
	return controllerEntry{
		Controller:     options.Controller{Name: sixth.ControllerName, Aliases: []string{"sixth"}},
		serviceAccount: "sixth-counter",
		rbac: rbac{
			Rules:  []rule{coreRule("The count, kept on each ConfigMap.", []string{"configmaps"}, "patch")},
			Writes: []string{"configmaps"},
		},
		watches: sixth.Watches,
		start: func(_ context.Context, cc ControllerContext) (bool, string, error) {
			return true, "", c.SetupWithManager(cc.Manager)
		},
	}
}

func isKind[T any](obj any) bool {
	_, ok := obj.(T)
	return ok
}
