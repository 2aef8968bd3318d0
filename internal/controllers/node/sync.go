package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/ownership"
)

// apiError marks a failed write to the API server, so that the failure is
// not blamed on the cloud.
type apiError struct{ err error }

func (e *apiError) Error() string { return e.err.Error() }
func (e *apiError) Unwrap() error { return e.err }

// sync initializes one Node, if it still carries the uninitialized taint.
// It reads the Node from the cache and writes at most twice: the
// addresses (status), then providerID, labels and the taint's removal in
// one write, so that the Node becomes schedulable only once its addresses
// are in place (where the role lets the controller write them).
func (c *Controller) sync(ctx context.Context, name string) error {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(name)
			return nil
		}
		return fmt.Errorf("get node %s from cache: %w", name, err)
	}
	if !isUninitialized(node) || c.ownership.Of(node) == ownership.Foreign {
		c.forget(name)
		c.clearWritten(name)
		return nil
	}
	if c.predatesWrite(node) {
		return nil
	}
	seen := c.firstSeen(name)
	log := logger(ctx, node)
	log.V(2).Info("Initializing node")

	md, err := c.metadata(ctx, node, seen)
	if err == nil {
		err = checkMetadata(node, md, c.cfg.ProviderIDOptional)
	}
	var addrs []corev1.NodeAddress
	if err == nil {
		addrs, err = desiredAddresses(node, md.NodeAddresses)
	}
	if err == nil {
		err = c.writeInit(ctx, node, md, addrs)
	}
	if err != nil {
		return c.initFailed(ctx, node, err)
	}
	c.metrics.taintRemoval.Observe(c.clock.Since(node.CreationTimestamp.Time).Seconds())
	// From the first sighting: seen moves with every failed attempt.
	waited := c.clock.Since(c.waitingSince(name, seen)).Seconds()
	c.forget(name)
	c.metrics.inits.WithLabelValues(kit.ResultSuccess).Inc()
	c.metrics.initDuration.Observe(waited)
	c.event(node, corev1.EventTypeNormal, ReasonSynced, actionInitialize, "Node synced successfully")
	c.metrics.initialSync.Observe(c.clock.Since(node.CreationTimestamp.Time).Seconds())
	log.V(2).Info("Initialized node", "providerID", node.Spec.ProviderID)
	return nil
}

// askOne asks the cloud about one Node with the standard per-node call.
func (c *Controller) askOne(ctx context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CloudTimeout)
	defer cancel()
	md, err := c.instances.InstanceMetadata(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node.Name, err)
	}
	return md, nil
}

// metadata asks the cloud about one Node: from a shared list answer that
// started after notBefore when the provider can list, else per Node.
func (c *Controller) metadata(ctx context.Context, node *corev1.Node, notBefore time.Time) (*cloudprovider.InstanceMetadata, error) {
	if c.batcher == nil {
		return c.askOne(ctx, node)
	}
	snap, err := c.batcher.Get(ctx, notBefore)
	if err != nil {
		return nil, err
	}
	return metadataFrom(snap, node)
}

// metadataFrom looks a Node up in a list answer; a successful answer that
// lacks it means the instance does not exist.
func metadataFrom(snap *snapshot, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	inst, ok, err := snap.Lookup(node)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("node %s is not among the cloud's instances: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	md := inst.Metadata
	md.NodeAddresses = slices.Clone(md.NodeAddresses)
	if md.ProviderID == "" {
		md.ProviderID = inst.ProviderID
	}
	return &md, nil
}

// checkMetadata refuses metadata a Node cannot be initialized from. The
// providerID matters only when the Node has none yet: a providerID already
// set is immutable and wins, as upstream's controller decides. An empty
// one is accepted when idOptional (a legacy provider without instance
// IDs); the Node then stays without one, as upstream leaves it.
func checkMetadata(node *corev1.Node, md *cloudprovider.InstanceMetadata, idOptional bool) error {
	if md == nil {
		return errNilMetadata
	}
	if node.Spec.ProviderID != "" || (idOptional && md.ProviderID == "") {
		return nil
	}
	return validateProviderID(md.ProviderID)
}

// writeInit writes the addresses if they differ, then providerID, labels
// and the taint's removal. The status patch answers with the updated Node,
// which is the base of the second write: no GET in between. A role that
// does not grant the status write leaves the Node with the addresses it
// has, as upstream's controller does (it logs the refused write and
// initializes the Node); see write.go for the second write's verbs.
func (c *Controller) writeInit(ctx context.Context, node *corev1.Node, md *cloudprovider.InstanceMetadata, addrs []corev1.NodeAddress) error {
	cur := node
	rvs := []string{node.ResourceVersion}
	if !slices.Equal(node.Status.Addresses, addrs) {
		patched, err := c.patchAddresses(ctx, node, addrs)
		switch {
		case statusForbidden(err):
			logger(ctx, node).Info("Writing the Node's addresses is forbidden: initializing it with the addresses it has, as upstream's node controller does; grant patch on nodes/status", "err", err)
		case err != nil:
			return err
		default:
			cur = patched
			rvs = append(rvs, cur.ResourceVersion)
		}
	}
	want := cur.DeepCopy()
	if want.Spec.ProviderID == "" {
		want.Spec.ProviderID = md.ProviderID
	}
	set, discarded := labelChanges(cur, md)
	if len(discarded) > 0 {
		logger(ctx, node).Info("Discarding provider labels: under a Kubernetes namespace or invalid", "labels", discarded)
	}
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	maps.Copy(want.Labels, set)
	want.Spec.Taints = withoutTaint(want.Spec.Taints, cloudproviderapi.TaintExternalCloudProvider)
	// A strategic merge patch removes only the uninitialized taint, so a
	// taint another controller adds meanwhile is kept without a conflict.
	if err := c.writeNode(ctx, want, cur, client.StrategicMergeFrom(cur)); err != nil {
		return &apiError{fmt.Errorf("write node %s: %w", node.Name, err)}
	}
	c.markWritten(node.Name, rvs...)
	*node = *want
	return nil
}

// initFailed records why a Node stays uninitialized and returns the error
// its retry is scheduled by (see Reconcile).
func (c *Controller) initFailed(ctx context.Context, node *corev1.Node, err error) error {
	if ctx.Err() != nil {
		return err
	}
	reason, result := classify(err)
	c.metrics.inits.WithLabelValues(result).Inc()
	if kit.ResultOf(err) == kit.ResultError {
		// A RetryError is the cloud's work in progress, not a failure
		// worth a warning (see kit.ResultOf).
		c.event(node, corev1.EventTypeWarning, reason, actionInitialize, "Node not initialized: %v", err)
	}
	logger(ctx, node).Info("Node not initialized, will retry", "reason", reason, "err", err)
	if result != resultAPIError {
		// The next attempt needs a list answer newer than this failure.
		c.retryAfterNow(node.Name)
	}
	return fmt.Errorf("initialize node %s: %w", node.Name, err)
}

// classify maps an initialization failure to its event reason and metric
// result.
func classify(err error) (reason, result string) {
	var apiErr *apiError
	switch {
	case errors.As(err, &apiErr):
		return ReasonUpdateFailed, resultAPIError
	case errors.Is(err, cloudprovider.InstanceNotFound):
		return ReasonInstanceNotFound, resultInstanceNotFound
	case errors.Is(err, errNilMetadata):
		return ReasonNilMetadata, resultInvalidMetadata
	case errors.Is(err, errNoProviderID), errors.Is(err, errMalformedID):
		return ReasonInvalidProviderID, resultInvalidMetadata
	case errors.Is(err, errNoAddresses):
		return ReasonNoAddresses, resultInvalidMetadata
	case errors.Is(err, errProvidedNodeIP):
		return ReasonInvalidNodeIP, resultProvidedNodeIP
	default:
		return ReasonInstanceMetadataErr, resultCloudError
	}
}
