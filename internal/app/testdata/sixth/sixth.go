// Package sixth is a trivial controller that exists to show what adding a
// controller to Stratus takes: this package and one entry in the daemon's
// controller table. It counts the ConfigMaps it reconciles.
package sixth

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName is the --controllers entry.
const ControllerName = "sixth-controller"

// Watches returns the kinds the controller reads through the shared cache.
func Watches() []client.Object { return []client.Object{&corev1.ConfigMap{}} }

// Controller counts reconciles.
type Controller struct {
	// Reconciled counts the reconciles, so a test can see it ran.
	Reconciled atomic.Int64
}

// SetupWithManager adds the controller to mgr.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	if err := builder.ControllerManagedBy(mgr).Named(ControllerName).For(&corev1.ConfigMap{}).Complete(c); err != nil {
		return fmt.Errorf("%s: %w", ControllerName, err)
	}
	return nil
}

// Reconcile counts one reconcile.
func (c *Controller) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	c.Reconciled.Add(1)
	return reconcile.Result{}, nil
}
