package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/ownership"
)

// RefreshResult summarises one refresh period.
type RefreshResult struct {
	Nodes         int
	StatusWrites  int
	LabelWrites   int
	Skipped       int
	Failed        int
	CloudListUsed bool
}

// runRefresh refreshes initialized Nodes every RefreshPeriod, the first
// time at once, until ctx ends.
func (c *Controller) runRefresh(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", ControllerName))
	ctx = kit.WithController(ctx, ControllerName)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if _, err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Refreshing node addresses and labels failed; next period retries")
		}
	}, c.cfg.RefreshPeriod)
	return nil
}

// Refresh brings every initialized Node's addresses and labels in line with
// the cloud, writing only what changed. With a lister the whole period
// costs one list call; otherwise one InstanceMetadata call per Node.
func (c *Controller) Refresh(ctx context.Context) (RefreshResult, error) {
	start := c.clock.Now()
	// Uncopied: a refresh only reads the cached Nodes (a patch works on its
	// own copy), and a copy of every Node each period is what a large
	// cluster's idle memory would peak on.
	var list corev1.NodeList
	if err := c.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		c.metrics.refreshes.WithLabelValues(kit.ResultError).Inc()
		return RefreshResult{}, fmt.Errorf("list nodes from cache: %w", err)
	}
	nodes := slices.DeleteFunc(list.Items, func(n corev1.Node) bool {
		return isUninitialized(&n) || c.ownership.Of(&n) == ownership.Foreign
	})
	res := RefreshResult{Nodes: len(nodes)}
	if len(nodes) == 0 {
		return res, nil
	}
	var snap *snapshot
	if c.batcher != nil {
		var err error
		if snap, err = c.batcher.Get(ctx, start); err != nil {
			c.metrics.refreshes.WithLabelValues(resultCloudError).Inc()
			return res, fmt.Errorf("refresh %d nodes: %w", len(nodes), err)
		}
		res.CloudListUsed = true
	}
	var status, labels, skipped, failed atomic.Int64
	workqueue.ParallelizeUntil(ctx, c.cfg.StatusWorkers, len(nodes), func(i int) {
		s, l, err := c.refreshNode(ctx, &nodes[i], snap)
		status.Add(int64(s))
		labels.Add(int64(l))
		switch {
		case errors.Is(err, errSkip):
			skipped.Add(1)
		case err != nil:
			failed.Add(1)
		}
	})
	res.StatusWrites, res.LabelWrites = int(status.Load()), int(labels.Load())
	res.Skipped, res.Failed = int(skipped.Load()), int(failed.Load())
	c.metrics.refreshTime.Observe(c.clock.Since(start).Seconds())
	if res.Failed > 0 {
		c.metrics.refreshes.WithLabelValues(kit.ResultError).Inc()
	} else {
		c.metrics.refreshes.WithLabelValues(kit.ResultSuccess).Inc()
	}
	klog.FromContext(ctx).V(2).Info("Refreshed nodes", "nodes", res.Nodes, "statusWrites", res.StatusWrites,
		"labelWrites", res.LabelWrites, "skipped", res.Skipped, "failed", res.Failed, "duration", c.clock.Since(start))
	return res, nil
}

// errSkip marks a Node the refresh leaves alone this period.
var errSkip = errors.New("skipped")

// refreshNode updates one Node; it reports how many status and label
// writes it made.
func (c *Controller) refreshNode(ctx context.Context, node *corev1.Node, snap *snapshot) (statusWrites, labelWrites int, err error) {
	log := logger(ctx, node)
	md, err := c.refreshMetadata(ctx, node, snap)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		// Deleting Nodes whose machine is gone is the lifecycle
		// controller's job, done only for NotReady Nodes.
		log.V(4).Info("Instance not found; refresh skips the node")
		return 0, 0, errSkip
	}
	if err != nil {
		log.Error(err, "Refreshing node failed")
		return 0, 0, err
	}
	if md == nil {
		return 0, 0, errSkip
	}
	addrs, err := desiredAddresses(node, md.NodeAddresses)
	// A role that does not grant the status write fails the addresses
	// every period, as upstream's; the labels are still refreshed.
	var statusErr error
	switch {
	case errors.Is(err, errNoAddresses):
		// As upstream: keep the addresses the Node has.
	case err != nil:
		c.event(node, corev1.EventTypeWarning, ReasonInvalidNodeIP, actionRefresh, "Addresses not refreshed: %v", err)
		log.Info("Addresses not refreshed", "err", err)
	case !slices.Equal(node.Status.Addresses, addrs):
		patched, err := c.patchAddresses(ctx, node, addrs)
		if err != nil && !statusForbidden(err) {
			return 0, 0, ignoreNotFound(err)
		}
		if err != nil {
			statusErr = err
			break
		}
		log.V(2).Info("Updated node addresses", "addresses", addrs)
		c.metrics.refreshWrites.WithLabelValues("status").Inc()
		statusWrites = 1
		node = patched
	}
	set, _ := labelChanges(node, md)
	if len(set) == 0 {
		return statusWrites, 0, statusErr
	}
	want := node.DeepCopy()
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	maps.Copy(want.Labels, set)
	if err := c.writeNode(ctx, want, node, client.MergeFrom(node)); err != nil {
		return statusWrites, 0, ignoreNotFound(fmt.Errorf("write labels of node %s: %w", node.Name, err))
	}
	log.V(2).Info("Updated node labels", "labels", set)
	c.metrics.refreshWrites.WithLabelValues("metadata").Inc()
	return statusWrites, 1, statusErr
}

func (c *Controller) refreshMetadata(ctx context.Context, node *corev1.Node, snap *snapshot) (*cloudprovider.InstanceMetadata, error) {
	if snap != nil {
		return metadataFrom(snap, node)
	}
	return c.askOne(ctx, node)
}

// ignoreNotFound turns "the Node was deleted meanwhile" into a skip.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return errSkip
	}
	return err
}
