package nodelifecycle

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// Answers of the second opinion, the label values of MetricSecondOpinions.
const (
	opinionConfirmed = "confirmed"
	opinionDisagreed = "disagreed"
	opinionFailed    = "failed"
)

// errKept marks a Node the list says is gone that the second opinion kept:
// the event and the metric are already recorded.
var errKept = errors.New("the per-node check did not confirm the list")

// secondOpinion asks the provider about one Node the period's list answer
// lacks, with the per-node call upstream's controller relies on. A list is
// one answer for many Nodes: a provider bug, a page cut short or an
// eventually consistent API would otherwise delete every Node it misses in
// one period. Only a per-node "does not exist" confirms the list; an
// existing instance (the two answers disagree) or a failed check keeps the
// Node, with a warning event and a count. Deletions are rare, so the
// confirmation adds a call only where one is about to happen.
func (c *Controller) secondOpinion(ctx context.Context, n *corev1.Node, sum *Summary) (exists, shutdown bool, err error) {
	sum.Confirmations++
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CloudTimeout)
	defer cancel()
	exists, err = c.instances.InstanceExists(cctx, n)
	c.metrics.observeExists(exists, err)
	log := klog.FromContext(ctx).WithValues("node", klog.KObj(n), "providerID", n.Spec.ProviderID)
	switch {
	case errors.Is(err, cloudprovider.NotImplemented):
		// The provider can never tell for this Node: upstream's
		// controller would never delete it, so neither does the list.
		return false, false, fmt.Errorf("%w: %w", errCannotTell, err)
	case err != nil:
		if ctx.Err() != nil {
			return false, false, err
		}
		c.metrics.secondOpinions.WithLabelValues(opinionFailed).Inc()
		sum.Disagreements++
		log.Info("Not deleting node: its instance is missing from the cloud's list, but the per-node check failed", "err", err)
		c.event(n, corev1.EventTypeWarning, ReasonDeletionUnconfirmed, actionCheck,
			"Not deleting: the cloud's instance list lacks spec.providerID %q, but InstanceExists could not confirm it is gone: %v", n.Spec.ProviderID, err)
		return false, false, fmt.Errorf("%w (second opinion): the cloud's instance list lacks spec.providerID %q, but InstanceExists could not confirm it is gone: %w", errKept, n.Spec.ProviderID, err)
	case exists:
		c.metrics.secondOpinions.WithLabelValues(opinionDisagreed).Inc()
		sum.Disagreements++
		log.Info("Not deleting node: its instance is missing from the cloud's list, but InstanceExists says it exists")
		c.event(n, corev1.EventTypeWarning, ReasonDeletionUnconfirmed, actionCheck,
			"Not deleting: the cloud's instance list lacks spec.providerID %q, but InstanceExists says the instance exists", n.Spec.ProviderID)
		return false, false, fmt.Errorf("%w (second opinion): the cloud's instance list lacks spec.providerID %q, but InstanceExists says the instance exists", errKept, n.Spec.ProviderID)
	}
	c.metrics.secondOpinions.WithLabelValues(opinionConfirmed).Inc()
	return false, false, nil
}
