package service

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// addFinalizer adds the cleanup finalizer and returns the Service as the
// API server now has it.
func (c *Controller) addFinalizer(ctx context.Context, svc *corev1.Service) (*corev1.Service, error) {
	if servicehelper.HasLBFinalizer(svc) {
		return svc, nil
	}
	updated := svc.DeepCopy()
	updated.Finalizers = append(updated.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
	klog.FromContext(ctx).V(2).Info("Adding load balancer cleanup finalizer")
	return c.patch(ctx, svc, updated)
}

// removeFinalizer removes the cleanup finalizer. A Service already gone
// is fine: that is what removing the last finalizer leads to.
func (c *Controller) removeFinalizer(ctx context.Context, svc *corev1.Service) error {
	if !servicehelper.HasLBFinalizer(svc) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool {
		return f == servicehelper.LoadBalancerCleanupFinalizer
	})
	klog.FromContext(ctx).V(2).Info("Removing load balancer cleanup finalizer")
	_, err := c.patch(ctx, svc, updated)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// patchStatus writes status.loadBalancer only when it differs, ipMode and
// ports included. With conds (the controller's own conditions as they
// stand after the sync) the same write carries them, so that a new load
// balancer costs one status write, as upstream's, not one for the ingress
// and one for the conditions.
func (c *Controller) patchStatus(ctx context.Context, svc *corev1.Service, status *corev1.LoadBalancerStatus, conds ...metav1.Condition) error {
	if statusEqual(&svc.Status.LoadBalancer, status) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer = *status.DeepCopy()
	if len(conds) > 0 {
		setOwnConditions(updated, conds)
	}
	klog.FromContext(ctx).V(2).Info("Patching load balancer status", "ingress", status.Ingress, "conditions", conditionSummary(conds))
	_, err := c.patch(ctx, svc, updated)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patch status: %w", err)
	}
	return nil
}

// patch writes the difference between old and updated in metadata and
// status to the status subresource, as a strategic merge patch, the way
// upstream's service controller writes (and the RBAC it is granted,
// services/status patch, allows): the API server's Service status strategy
// keeps metadata changes, the finalizer list merges with other writers'
// entries, and without a resourceVersion precondition a stale cached copy
// cannot make the write fail. updated receives the Service as the API
// server now has it.
func (c *Controller) patch(ctx context.Context, old, updated *corev1.Service) (*corev1.Service, error) {
	if err := c.client.Status().Patch(ctx, updated, client.StrategicMergeFrom(old)); err != nil {
		return nil, fmt.Errorf("patch service %s: %w", klog.KObj(old), err)
	}
	c.state.wrote(updated)
	return updated, nil
}
