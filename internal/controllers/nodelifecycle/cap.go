package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/ownership"
)

// Defaults of the deletion cap (DeletionCap's zero values).
const (
	// DefaultDeletionWindow is the window the shares are counted over.
	DefaultDeletionWindow = 10 * time.Minute
	// DefaultMaxDeletionShare: at most a tenth of the cluster's Nodes per
	// window. A scale-in or a rolling replacement of machines deletes
	// Nodes a few at a time; a tenth of the cluster at once is what a
	// cloud answering wrongly looks like.
	DefaultMaxDeletionShare = 0.1
	// DefaultMaxZoneDeletionShare: at most a fifth of one zone's Nodes
	// per window; a zone outage is when the cloud's answers are least
	// trustworthy and most Nodes are NotReady at once.
	DefaultMaxZoneDeletionShare = 0.2
	// DefaultMinDeletions: whatever the shares, this many deletions per
	// window are allowed, so a small cluster still loses its dead Nodes.
	DefaultMinDeletions = 2
)

// DeletionCap bounds the Nodes the controller deletes within a window,
// beside kube-controller-manager's eviction rate limits; see
// docs/reliability.md. A deletion is allowed while both the cluster's and
// the Node's zone's counts stay within their limits: max(Min, ⌊share ×
// Nodes⌋).
type DeletionCap struct {
	// Window is how far back deletions count; zero means
	// DefaultDeletionWindow.
	Window time.Duration
	// MaxShare of the cluster's Nodes; zero means DefaultMaxDeletionShare.
	// 1 lifts the cluster's cap.
	MaxShare float64
	// MaxZoneShare of one zone's Nodes; zero means
	// DefaultMaxZoneDeletionShare. 1 lifts the zone's cap.
	MaxZoneShare float64
	// Min deletions allowed per window whatever the shares; zero means
	// DefaultMinDeletions.
	Min int
}

// withDefaults fills the zero values and checks the rest.
func (d DeletionCap) withDefaults() (DeletionCap, error) {
	if d.Window < 0 || d.MaxShare < 0 || d.MaxShare > 1 || d.MaxZoneShare < 0 || d.MaxZoneShare > 1 || d.Min < 0 {
		return d, fmt.Errorf("node lifecycle controller: deletion cap %+v: the window and the minimum must not be negative, the shares must be within [0, 1]", d)
	}
	d.Window = kit.OrDefault(d.Window, DefaultDeletionWindow)
	d.MaxShare = kit.OrDefault(d.MaxShare, DefaultMaxDeletionShare)
	d.MaxZoneShare = kit.OrDefault(d.MaxZoneShare, DefaultMaxZoneDeletionShare)
	d.Min = kit.OrDefault(d.Min, DefaultMinDeletions)
	return d, nil
}

func (d DeletionCap) limit(share float64, nodes int) int {
	return max(d.Min, int(share*float64(nodes)))
}

// ledger is the controller's record of the deletions within the window.
// With a DeletionRecord (the daemon always gives one) it mirrors the
// ConfigMap that keeps the record in the API server (caprecord.go), so a
// new leader, or the same process restarted, counts the deletions its
// predecessor made; without one it lives in memory only (a new process
// starts empty). The workers take turns with it (Controller.deleting).
type ledger struct {
	cap   DeletionCap
	clock clock.PassiveClock
	done  []deletion
	// heldUntil, when in the future, holds every deletion: the stored
	// record was malformed (heldWhy says where), so what it counted is
	// unknown (see recordStore.load).
	heldUntil time.Time
	heldWhy   string
}

// deletion is one entry of the record: when, which Node (its UID tells a
// Node from another registered later under the same name), and its zone.
type deletion struct {
	at   time.Time
	node string
	uid  types.UID
	zone string
}

// prune drops the deletions older than the window.
func (l *ledger) prune() {
	cutoff := l.clock.Now().Add(-l.cap.Window)
	l.done = slices.DeleteFunc(l.done, func(d deletion) bool { return d.at.Before(cutoff) })
}

// counted reports whether the deletion of n is already in the window: its
// entry was written, and then the delete failed, or the process ended
// before it. Deleting it now adds nothing to the count.
func (l *ledger) counted(n *corev1.Node) bool {
	return slices.ContainsFunc(l.done, func(d deletion) bool { return d.uid == n.UID && d.node == n.Name })
}

// census is the Nodes the cap is a share of, counted once per period and
// only when the period is about to delete.
type census struct {
	total  int
	byZone map[string]int
}

// takeCensus counts the cluster's Nodes, and those of each zone, from the
// cache. Foreign Nodes are not counted: they are never deleted here, and
// must not widen the share of those that can be.
func (c *Controller) takeCensus(ctx context.Context) (*census, error) {
	var list corev1.NodeList
	if err := c.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list nodes from cache for the deletion cap: %w", err)
	}
	cs := &census{byZone: map[string]int{}}
	for i := range list.Items {
		if c.ownership.Of(&list.Items[i]) == ownership.Foreign {
			continue
		}
		cs.total++
		cs.byZone[zoneOf(&list.Items[i])]++
	}
	return cs, nil
}

// zoneOf returns the Node's zone label (the GA one, else the beta one the
// node controller still writes); "" groups the Nodes without one.
func zoneOf(n *corev1.Node) string {
	if z, ok := n.Labels[corev1.LabelTopologyZone]; ok {
		return z
	}
	return n.Labels[corev1.LabelFailureDomainBetaZone]
}

// periodState is what one period knows about the cap.
type periodState struct {
	census *census
}

// capHolds reports whether the cap holds back the deletion of n, and if
// so records why (event on the Node, metric, log line) and returns it.
func (c *Controller) capHolds(ctx context.Context, n *corev1.Node, ps *periodState, sum *Summary) (bool, string, error) {
	if ps.census == nil {
		cs, err := c.takeCensus(ctx)
		if err != nil {
			return true, "", err
		}
		ps.census = cs
	}
	c.ledger.prune()
	if now := c.clock.Now(); now.Before(c.ledger.heldUntil) {
		// The whole cluster's deletions wait: scope cluster.
		return c.held(ctx, n, sum, "cluster", fmt.Sprintf("%s; it is counted as full until %s, a window after it was read",
			c.ledger.heldWhy, c.ledger.heldUntil.UTC().Format(time.RFC3339)))
	}
	zone := zoneOf(n)
	zoneDone := 0
	for _, d := range c.ledger.done {
		if d.zone == zone {
			zoneDone++
		}
	}
	limit := c.ledger.cap.limit(c.ledger.cap.MaxShare, ps.census.total)
	zoneLimit := c.ledger.cap.limit(c.ledger.cap.MaxZoneShare, ps.census.byZone[zone])
	var scope, why string
	switch {
	case len(c.ledger.done) >= limit:
		scope = "cluster"
		why = fmt.Sprintf("%d of the cluster's %d Nodes deleted in the last %s, the cap is %d", len(c.ledger.done), ps.census.total, c.ledger.cap.Window, limit)
	case zoneDone >= zoneLimit:
		scope = "zone"
		why = fmt.Sprintf("%d of zone %q's %d Nodes deleted in the last %s, the cap is %d", zoneDone, zone, ps.census.byZone[zone], c.ledger.cap.Window, zoneLimit)
	default:
		return false, "", nil
	}
	return c.held(ctx, n, sum, scope, why)
}

// held records that the cap holds back the deletion of n (event on the
// Node, metric, log line) and returns why.
func (c *Controller) held(ctx context.Context, n *corev1.Node, sum *Summary, scope, why string) (bool, string, error) {
	sum.Held++
	c.metrics.held.WithLabelValues(scope).Inc()
	klog.FromContext(ctx).Info("Not deleting node although its instance is gone: the deletion cap holds", "node", klog.KObj(n), "scope", scope, "reason", why)
	c.event(n, corev1.EventTypeWarning, ReasonDeletionCapped, actionDelete,
		"Not deleting node %s although its instance is gone: %s (--node-deletion-max-share, --node-deletion-max-zone-share, --node-deletion-window); a later period deletes it", n.Name, why)
	return true, why, nil
}
