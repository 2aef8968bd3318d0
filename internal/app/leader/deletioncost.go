package leader

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
)

// Pod facts the chart gives each replica through the downward API.
const (
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
)

// AnnotationPodDeletionCost is the ReplicaSet controller's ranking of the
// pods it removes on a scale-down: lower costs go first.
const AnnotationPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// LeaderDeletionCost is the cost the leader gives its own pod. Standbys keep
// the default, 0.
const LeaderDeletionCost = "1000"

// DeletionCost marks the leader's pod with AnnotationPodDeletionCost once
// it holds the Lease. A rolling update of the chart's Deployment (one pod
// at a time, no surge) then replaces the standbys first and the leader
// last: the Lease passes once, from the old leader to a replica of the new
// revision that already runs, instead of first to an old standby that is
// about to go too. A scale-down keeps the leader the same way.
//
// The mark is best effort: without the pod's name (not run by the chart)
// nothing is done, and a refused patch (RBAC or the chart's admission
// policy) is logged once; leading does not depend on it.
type DeletionCost struct {
	pods      typedcorev1.PodsGetter
	namespace string
	name      string
	backoff   wait.Backoff
}

// NewDeletionCost returns the marker of the pod namespace/name; nil when
// either is empty (the replica does not run in a pod it knows).
func NewDeletionCost(pods typedcorev1.PodsGetter, namespace, name string) *DeletionCost {
	if namespace == "" || name == "" {
		return nil
	}
	return &DeletionCost{pods: pods, namespace: namespace, name: name,
		backoff: wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 5, Cap: 30 * time.Second}}
}

// NeedLeaderElection makes the manager start it only once the Lease is won.
func (d *DeletionCost) NeedLeaderElection() bool { return true }

// Start marks the pod, retrying transient errors a few times, and returns:
// the mark stays with the pod for as long as it lives.
func (d *DeletionCost) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("pod", klog.KRef(d.namespace, d.name), "annotation", AnnotationPodDeletionCost)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{AnnotationPodDeletionCost: LeaderDeletionCost}}})
	if err != nil {
		return fmt.Errorf("pod deletion cost patch: %w", err)
	}
	var last error
	err = wait.ExponentialBackoffWithContext(ctx, d.backoff, func(ctx context.Context) (bool, error) {
		_, last = d.pods.Pods(d.namespace).Patch(ctx, d.name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case last == nil:
			return true, nil
		case apierrors.IsForbidden(last), apierrors.IsNotFound(last), apierrors.IsInvalid(last):
			return false, last
		default:
			return false, nil
		}
	})
	switch {
	case err == nil:
		log.Info("Marked the leader's pod to be replaced last", "value", LeaderDeletionCost)
	case ctx.Err() != nil:
	default:
		// Leading goes on: only the order of a rolling update depends on it.
		log.Info("Could not mark the leader's pod to be replaced last: a rolling update may move the Lease twice",
			"err", last, "hint", "the chart grants the patch of the replica's own pod")
	}
	return nil
}
