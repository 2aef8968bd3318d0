package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
		c.metrics.observeOpinion(n, opinionFailed)
		sum.Disagreements++
		log.Info("Not deleting node: its instance is missing from the cloud's list, but the per-node check failed", "err", err)
		c.event(n, corev1.EventTypeWarning, ReasonDeletionUnconfirmed, actionCheck,
			"Not deleting: the cloud's instance list lacks spec.providerID %q, but InstanceExists could not confirm it is gone: %v", n.Spec.ProviderID, err)
		return false, false, fmt.Errorf("%w (second opinion): the cloud's instance list lacks spec.providerID %q, but InstanceExists could not confirm it is gone: %w", errKept, n.Spec.ProviderID, err)
	case exists:
		c.metrics.observeOpinion(n, opinionDisagreed)
		sum.Disagreements++
		log.Info("Not deleting node: its instance is missing from the cloud's list, but InstanceExists says it exists")
		c.event(n, corev1.EventTypeWarning, ReasonDeletionUnconfirmed, actionCheck,
			"Not deleting: the cloud's instance list lacks spec.providerID %q, but InstanceExists says the instance exists", n.Spec.ProviderID)
		return false, false, fmt.Errorf("%w (second opinion): the cloud's instance list lacks spec.providerID %q, but InstanceExists says the instance exists", errKept, n.Spec.ProviderID)
	}
	c.metrics.observeOpinion(n, opinionConfirmed)
	return false, false, nil
}

// opinionEpisodes decides which second opinions MetricSecondOpinions
// counts: each answer once per Node per episode. A Node the cap holds
// back, or one the list keeps lacking while its instance exists, is asked
// again every period; counting every ask made "confirmed" climb each
// period for a Node that was never deleted, which reads as a new machine
// gone each time. An episode is one run of consecutive periods in which
// the Node is asked, within one NotReady spell (the Ready condition's
// lastTransitionTime): it ends when a period does not ask about the Node
// (deleted, Ready, back in the list) or the Node turns NotReady anew.
type opinionEpisodes struct {
	mu sync.Mutex
	// period counts the monitor periods whose instance list answered,
	// the only ones that ask second opinions.
	period int
	nodes  map[types.UID]*opinionEpisode
}

type opinionEpisode struct {
	notReadySince time.Time
	lastPeriod    int
	answers       []string
}

func newOpinionEpisodes() *opinionEpisodes {
	return &opinionEpisodes{nodes: map[types.UID]*opinionEpisode{}}
}

// newPeriod starts a period's second opinions. An episode not asked in
// the period before ended then: it is forgotten, which also bounds the
// memory to the Nodes asked in the last two periods.
func (e *opinionEpisodes) newPeriod() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.period++
	for uid, ep := range e.nodes {
		if ep.lastPeriod < e.period-1 {
			delete(e.nodes, uid)
		}
	}
}

// first reports whether n's answer is the first of its kind in n's
// episode, and records it.
func (e *opinionEpisodes) first(n *corev1.Node, answer string) bool {
	since := notReadySince(n)
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, ok := e.nodes[n.UID]
	if !ok || !ep.notReadySince.Equal(since) || ep.lastPeriod < e.period-1 {
		ep = &opinionEpisode{notReadySince: since}
		e.nodes[n.UID] = ep
	}
	ep.lastPeriod = e.period
	if slices.Contains(ep.answers, answer) {
		return false
	}
	ep.answers = append(ep.answers, answer)
	return true
}

// notReadySince is when n's Ready condition last changed: the start of
// its NotReady spell (zero without a Ready condition).
func notReadySince(n *corev1.Node) time.Time {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
