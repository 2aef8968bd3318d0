package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/ownership"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Summary is what one period did.
type Summary struct {
	NotReady  int
	Deleted   int
	Tainted   int
	Untainted int
	Undecided int
	// Unknowable counts NotReady Nodes the provider can never tell about
	// (it answers NotImplemented, as a legacy provider without instance
	// IDs does for a Node without providerID): left alone, quietly.
	Unknowable     int
	CloudListCalls int
	// Confirmations counts the per-node checks of Nodes the list lacked;
	// Disagreements, those that did not confirm the list (kept).
	Confirmations int
	Disagreements int
	// Held counts the Nodes whose instance is gone that the deletion cap
	// kept this period.
	Held int
	// Foreign counts the Nodes of another platform left alone; NoPlatform,
	// the Nodes naming no platform kept although the cloud lacks them.
	Foreign    int
	NoPlatform int
}

// sync runs one monitor period over every Node.
func (c *Controller) sync(ctx context.Context, _ pass) (Summary, error) {
	start := c.clock.Now()
	defer func() {
		d := c.clock.Since(start).Seconds()
		c.metrics.duration.Observe(d)
		c.metrics.upstreamDuration.Observe(d)
	}()
	// Only the Nodes that need attention, from the index; uncopied, since
	// they are only read (a patch works on its own copy).
	var list corev1.NodeList
	if err := c.client.List(ctx, &list, client.MatchingFields{attentionField: attentionValue}, client.UnsafeDisableDeepCopy); err != nil {
		return Summary{}, fmt.Errorf("list nodes from cache: %w", err)
	}
	var sum Summary
	var errs []error
	var notReady []*corev1.Node
	judged := map[string]bool{}
	defer func() { c.forgetUnjudged(ctx, judged) }()
	for i := range list.Items {
		n := &list.Items[i]
		if c.ownership.Of(n) == ownership.Foreign {
			sum.Foreign++
			continue
		}
		if !isReady(n) {
			notReady = append(notReady, n)
			continue
		}
		if HasShutdownTaint(n) {
			judged[n.Name] = true
			if err := c.removeShutdownTaint(ctx, n); err != nil {
				errs = append(errs, err)
				c.judged(n.Name, verdict{line: "Ready, but removing the shutdown taint failed", err: err})
			} else {
				sum.Untainted++
				c.judged(n.Name, verdict{line: "Ready again: removed the shutdown taint " + shutdownTaintText()})
			}
		}
	}
	sum.NotReady = len(notReady)
	if len(notReady) == 0 {
		return sum, errors.Join(errs...)
	}
	check, err := c.checker(ctx, &sum)
	if err != nil {
		c.undecided(ctx, notReady, err)
		for _, n := range notReady {
			judged[n.Name] = true
			c.judged(n.Name, verdict{line: "NotReady; the cloud's instance list failed, so nothing was decided this period", err: err})
		}
		sum.Undecided = len(notReady)
		return sum, errors.Join(append(errs, err)...)
	}
	for _, n := range notReady {
		judged[n.Name] = true
	}
	// NotReady Nodes are checked in parallel (--concurrent-node-lifecycle-syncs,
	// as upstream's monitor does since v1.37); each worker counts into its
	// own Summary, and deletions take turns (gone), so the cap holds
	// exactly whatever the worker count.
	var ps periodState
	sums := make([]Summary, len(notReady))
	nodeErrs := make([]error, len(notReady))
	workqueue.ParallelizeUntil(ctx, c.cfg.Workers, len(notReady), func(i int) {
		n := notReady[i]
		v, err := c.monitor(explain.WithObject(ctx, nodeRef(n.Name)), n, check, &ps, &sums[i])
		nodeErrs[i] = err
		c.judged(n.Name, v)
	})
	for i := range sums {
		sum.add(&sums[i])
	}
	c.metrics.heldNow.Set(float64(sum.Held))
	return sum, errors.Join(append(errs, nodeErrs...)...)
}

// add counts o's per-Node figures into s (not NotReady, counted once by
// the period).
func (s *Summary) add(o *Summary) {
	s.Deleted += o.Deleted
	s.Tainted += o.Tainted
	s.Untainted += o.Untainted
	s.Undecided += o.Undecided
	s.Unknowable += o.Unknowable
	s.CloudListCalls += o.CloudListCalls
	s.Confirmations += o.Confirmations
	s.Disagreements += o.Disagreements
	s.Held += o.Held
	s.Foreign += o.Foreign
	s.NoPlatform += o.NoPlatform
}

// monitor decides one NotReady Node, and says what it decided.
func (c *Controller) monitor(ctx context.Context, n *corev1.Node, check checkFunc, ps *periodState, sum *Summary) (verdict, error) {
	exists, shutdown, err := check(ctx, n, sum)
	if errors.Is(err, errCannotTell) {
		// Upstream logs an error for such a Node every period and leaves
		// it; Stratus leaves it too, without the noise: nothing will
		// change until the Node gets a providerID.
		klog.FromContext(ctx).V(4).Info("Provider cannot tell whether the node's instance exists; leaving it", "node", klog.KObj(n), "err", err)
		sum.Unknowable++
		return verdict{line: fmt.Sprintf("NotReady; left alone: the cloud provider cannot tell whether its instance exists (spec.providerID %q): %v", n.Spec.ProviderID, err)}, nil
	}
	if errors.Is(err, errKept) {
		return verdict{line: "NotReady; kept: " + err.Error(), deferred: true}, nil
	}
	if err != nil {
		c.undecided(ctx, []*corev1.Node{n}, err)
		sum.Undecided++
		if !cloud.IsCloudFault(err) {
			return verdict{line: "NotReady; the cloud provider refused to check whether its instance exists (an error of this Node's, not an outage), so nothing was decided this period", err: err}, nil
		}
		return verdict{line: "NotReady; the cloud did not answer whether its instance exists, so nothing was decided this period", err: err}, nil
	}
	switch {
	case !exists && c.ownership.Of(n) == ownership.Unknown:
		// In a hybrid cluster a Node without providerID or platform
		// annotation may be another platform's, registered before its
		// controller set the providerID: the cloud's not-found alone
		// does not prove it was ever ours.
		klog.FromContext(ctx).V(2).Info("Not deleting node: it names no platform, and the cloud does not know it", "node", klog.KObj(n))
		sum.NoPlatform++
		return verdict{line: "NotReady; kept although the cloud does not know its instance: it names no platform (no spec.providerID, no platform annotation), so it may be another platform's"}, nil
	case !exists:
		return c.gone(ctx, n, ps, sum)
	case shutdown && !HasShutdownTaint(n):
		if err := c.addShutdownTaint(ctx, n); err != nil {
			return verdict{line: "NotReady; its instance is shut down, but adding the shutdown taint failed", err: err}, err
		}
		sum.Tainted++
		return verdict{line: "NotReady; its instance is shut down: tainted " + shutdownTaintText()}, nil
	case shutdown:
		return verdict{line: "NotReady; its instance is shut down: it carries " + shutdownTaintText()}, nil
	}
	return verdict{line: "NotReady, but its instance exists and runs: nothing for this controller to do (the kubelet does not report Ready)"}, nil
}

// gone deletes a Node whose instance the cloud confirmed gone, unless the
// deletion cap holds it back.
func (c *Controller) gone(ctx context.Context, n *corev1.Node, ps *periodState, sum *Summary) (verdict, error) {
	// One deletion at a time: the cap's count, the ledger entry and the
	// delete must not interleave with another worker's. The entry is
	// recorded before the delete (reserve, caprecord.go).
	c.deleting.Lock()
	defer c.deleting.Unlock()
	held, why, err := c.reserve(ctx, n, ps, sum)
	if err != nil {
		return verdict{line: "NotReady, its instance gone; kept: the deletion cap could not be checked, or its record read or written", err: err}, err
	}
	if held {
		return verdict{line: "NotReady, its instance gone; deletion held by the deletion cap: " + why, deferred: true}, nil
	}
	deleted, err := c.deleteNode(ctx, n)
	if err != nil {
		return verdict{line: "NotReady, its instance gone; deleting the Node failed", err: err}, err
	}
	if !deleted {
		return verdict{line: "NotReady, its instance gone; the Node changed since it was judged, so the next period decides again", deferred: true}, nil
	}
	sum.Deleted++
	return verdict{deleted: true}, nil
}

// checkFunc answers whether a Node's machine exists and is shut down.
type checkFunc func(ctx context.Context, n *corev1.Node, sum *Summary) (exists, shutdown bool, err error)

// checker returns how this period asks the cloud: one list for all Nodes
// when the provider can list (a failed list decides nothing), with a
// per-node second opinion before a Node the list lacks is judged gone;
// else per Node.
func (c *Controller) checker(ctx context.Context, sum *Summary) (checkFunc, error) {
	if c.lister == nil {
		return c.checkOne, nil
	}
	lctx, cancel := context.WithTimeout(ctx, c.cfg.CloudTimeout)
	defer cancel()
	sum.CloudListCalls++
	insts, err := c.lister.ListInstances(lctx)
	c.metrics.observeCall(opListInstances, err)
	if err != nil {
		return nil, err // the cloud wrapper names the operation
	}
	idx := newIndex(insts)
	return func(ctx context.Context, n *corev1.Node, sum *Summary) (bool, bool, error) {
		exists, shutdown, err := idx.lookup(n)
		if err != nil || exists {
			return exists, shutdown, err
		}
		return c.secondOpinion(ctx, n, sum)
	}, nil
}

// errCannotTell marks a Node the provider can never answer for.
var errCannotTell = errors.New("the cloud provider cannot tell (NotImplemented)")

// checkOne asks the cloud about one Node with the standard calls.
func (c *Controller) checkOne(ctx context.Context, n *corev1.Node, _ *Summary) (exists, shutdown bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CloudTimeout)
	defer cancel()
	exists, err = c.instances.InstanceExists(ctx, n)
	c.metrics.observeExists(exists, err)
	if errors.Is(err, cloudprovider.NotImplemented) {
		return false, false, fmt.Errorf("%w: %w", errCannotTell, err)
	}
	if err != nil {
		return false, false, err // the cloud wrapper names the operation
	}
	if !exists {
		return false, false, nil
	}
	shutdown, err = c.instances.InstanceShutdown(ctx, n)
	c.metrics.observeCall(opInstanceShutdown, err)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		// Gone between the two calls: the next period sees it gone.
		return true, false, nil
	}
	if err != nil {
		return true, false, err // the cloud wrapper names the operation
	}
	return true, shutdown, nil
}

// undecided records that the cloud could not answer for these Nodes.
func (c *Controller) undecided(ctx context.Context, nodes []*corev1.Node, err error) {
	if ctx.Err() != nil {
		return
	}
	c.metrics.cloudErrors.Inc()
	if cloud.IsCloudFault(err) {
		c.periodOutage.Store(true)
		klog.FromContext(ctx).Info("Cloud did not answer; not deleting or tainting NotReady nodes this period", "nodes", len(nodes), "err", err)
	} else {
		// The nodes' own error (a providerID the provider cannot parse, a
		// refused argument): the cloud answers, it is not an outage.
		klog.FromContext(ctx).Info("Cloud provider refused to check these NotReady nodes' instances; not deleting or tainting them this period", "nodes", len(nodes), "err", err)
	}
	for _, n := range nodes {
		c.event(n, corev1.EventTypeWarning, ReasonCloudCheckFailed, actionCheck, "Could not check the node's instance, will retry: %v", err)
	}
}

// deleteNode deletes a Node whose machine is gone. The preconditions make
// the delete apply only to the Node as judged: a Node re-registered under
// the same name, or one that changed since the cache showed it (became
// Ready, say), is left for the next period. It reports whether this call
// deleted the Node.
func (c *Controller) deleteNode(ctx context.Context, n *corev1.Node) (bool, error) {
	log := klog.FromContext(ctx).WithValues("node", klog.KObj(n))
	log.Info("Deleting node: its instance no longer exists in the cloud")
	c.event(n, corev1.EventTypeNormal, ReasonDeletingNode, actionDelete, "Deleting node %s because it does not exist in the cloud provider", n.Name)
	uid, rv := n.UID, n.ResourceVersion
	err := c.client.Delete(ctx, n, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err == nil || apierrors.IsNotFound(err) {
		c.metrics.deletions.WithLabelValues(kit.ResultSuccess).Inc()
		return err == nil, nil
	}
	c.metrics.deletions.WithLabelValues(kit.ResultError).Inc()
	if apierrors.IsConflict(err) {
		log.V(2).Info("Node changed since it was judged; deciding again next period")
		return false, nil
	}
	c.event(n, corev1.EventTypeWarning, ReasonDeletingNodeFailed, actionDelete, "Failed deleting node %s: %v", n.Name, err)
	return false, fmt.Errorf("delete node %s: %w", n.Name, err)
}

func (c *Controller) addShutdownTaint(ctx context.Context, n *corev1.Node) error {
	want := n.DeepCopy()
	want.Spec.Taints = append(want.Spec.Taints, ShutdownTaint())
	if err := c.client.Patch(ctx, want, client.StrategicMergeFrom(n)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("add shutdown taint to node %s: %w", n.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Tainted node: its instance is shut down", "node", klog.KObj(n))
	c.metrics.taints.WithLabelValues("add").Inc()
	return nil
}

func (c *Controller) removeShutdownTaint(ctx context.Context, n *corev1.Node) error {
	want := n.DeepCopy()
	taint := ShutdownTaint()
	want.Spec.Taints = slices.DeleteFunc(want.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) })
	if err := c.client.Patch(ctx, want, client.StrategicMergeFrom(n)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("remove shutdown taint from node %s: %w", n.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Removed shutdown taint from Ready node", "node", klog.KObj(n))
	c.metrics.taints.WithLabelValues("remove").Inc()
	return nil
}

func (c *Controller) event(n *corev1.Node, typ, reason, action, note string, args ...any) {
	c.recorder.Eventf(n, nil, typ, reason, action, note, args...)
}

// isReady reports whether the Node's Ready condition is True; a missing
// condition counts as Unknown, as upstream's controller treats it.
func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
