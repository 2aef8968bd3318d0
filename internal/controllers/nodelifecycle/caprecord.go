package nodelifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The deletion cap's record: a ConfigMap of Stratus' own, next to the
// leader-election Lease, that keeps the deletions within the window, so
// that a leader change or a restart does not reset the cap (each new
// leader, starting empty, could otherwise delete the cap's worth again).
// It is not written into the Lease itself: the leader's lock updates the
// Lease object it cached, so a second writer would make its renewals
// conflict.
const (
	// recordSuffix follows the Lease's name in the record's.
	recordSuffix = "-node-deletions"
	// RecordKey is the record's one data key: a JSON list of deletions.
	RecordKey = "deletions"
	// LabelManagedBy and ManagedBy mark the record as Stratus'.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "stratus"
	// LabelComponent names what the record is for.
	LabelComponent  = "app.kubernetes.io/component"
	recordComponent = "node-deletion-record"
	// maxRecordAttempts bounds the re-reads after conflicting writes in
	// one deletion; past them the deletion waits for the next period.
	maxRecordAttempts = 3
)

// Event reasons of the record.
const (
	// ReasonDeletionNotRecorded: the Node's instance is gone and the cap
	// allows its deletion, but the record could not be read or written,
	// so the Node is kept (on the Node).
	ReasonDeletionNotRecorded = "NodeDeletionNotRecorded"
	// ReasonRecordMalformed: the stored record does not parse (on the
	// ConfigMap).
	ReasonRecordMalformed = "NodeDeletionRecordMalformed"
	// ReasonRecordForbidden: the controller's identity may not read or
	// write the record (RBAC made for upstream's controller manager), so
	// the cap counts in this process's memory, as upstream's would, and a
	// leader change resets it (on the Node whose deletion found out).
	ReasonRecordForbidden = "NodeDeletionRecordForbidden"
	actionReadRecord      = "ReadRecord"
)

// RecordName is the name of the record's ConfigMap for the
// leader-election Lease called leaseName (--leader-elect-resource-name);
// it lives in the Lease's namespace.
func RecordName(leaseName string) string { return leaseName + recordSuffix }

// recordEntry is one deletion as the ConfigMap stores it.
type recordEntry struct {
	// Time is when the deletion was counted, RFC 3339 with nanoseconds.
	Time string `json:"time"`
	Node string `json:"node"`
	UID  string `json:"uid,omitempty"`
	Zone string `json:"zone,omitempty"`
}

// recordStore is where the ledger is kept in the API server.
type recordStore struct {
	key types.NamespacedName
	// reader reads the ConfigMap from the API server, past the shared
	// cache: the controller watches no ConfigMaps, and must see the last
	// leader's writes, not a cache's view of them.
	reader client.Reader
	writer client.Client
	// obj is the ConfigMap as last read or written, whose resourceVersion
	// the next write is conditional on; without one, the next write
	// creates it. Nil means read it before the next deletion: at start,
	// after a conflict and after a failed write (which may have landed).
	obj *corev1.ConfigMap
}

// errRecordStale: the record changed since it was read; read it again.
var errRecordStale = errors.New("the record changed since it was read")

// reserve decides whether n, whose instance is gone, may be deleted now,
// and if so counts its deletion in the record before the Node is deleted:
// a crash between the two then counts a deletion that may not have
// happened rather than forgetting one that did. It returns true (held)
// with the reason when the cap holds; an error when the record could not
// be read or written, which keeps the Node too (a Node is never deleted
// without its deletion being recorded). A write that conflicts with
// another's (a former leader still finishing a deletion) reads the record
// again and decides again.
func (c *Controller) reserve(ctx context.Context, n *corev1.Node, ps *periodState, sum *Summary) (bool, string, error) {
	for attempt := 1; ; attempt++ {
		if err := c.loadRecord(ctx); err != nil {
			if c.recordForbidden(ctx, n, err) {
				continue
			}
			return true, "", c.notRecorded(ctx, n, err)
		}
		c.ledger.prune()
		if c.ledger.counted(n) {
			// Counted by an earlier attempt whose delete failed or never
			// came: deleting it now adds nothing to the window's count.
			return false, "", nil
		}
		held, why, err := c.capHolds(ctx, n, ps, sum)
		if err != nil || held {
			return held, why, err
		}
		done := append(slices.Clone(c.ledger.done), deletion{at: c.clock.Now(), node: n.Name, uid: n.UID, zone: zoneOf(n)})
		err = c.saveRecord(ctx, done)
		if err == nil {
			c.ledger.done = done
			return false, "", nil
		}
		if c.recordForbidden(ctx, n, err) {
			continue
		}
		if errors.Is(err, errRecordStale) && attempt < maxRecordAttempts {
			klog.FromContext(ctx).V(2).Info("Deletion record changed since it was read; reading it again", "node", klog.KObj(n), "record", c.record.key)
			continue
		}
		return true, "", c.notRecorded(ctx, n, err)
	}
}

// recordForbidden handles a record the API server refuses this identity
// (RBAC): deployments made for upstream's controller manager grant no
// ConfigMaps, and keeping every Node forever there would break the drop-in
// promise for a guarantee upstream does not give. The cap then counts in
// memory, as before it had a record: it holds within one leader, and a
// leader change resets it. Said once, loudly, with what to grant; a
// restart after the grant brings the record back. Any other failure keeps
// the Node (notRecorded).
func (c *Controller) recordForbidden(ctx context.Context, n *corev1.Node, err error) bool {
	if c.record == nil || !apierrors.IsForbidden(err) {
		return false
	}
	key := c.record.key
	c.record = nil
	msg := fmt.Sprintf("this controller may not read or write ConfigMap %s, the node deletion cap's record (%v): "+
		"the cap counts in this process's memory only, so a leader change or restart resets it; "+
		"grant get, create and update on that ConfigMap (the chart does) and restart", key, err)
	klog.FromContext(ctx).Error(err, "Node deletion cap without its record: it does not survive a leader change", "record", key)
	c.event(n, corev1.EventTypeWarning, ReasonRecordForbidden, actionDelete, "Deleting node %s under the deletion cap: %s", n.Name, msg)
	return true
}

// notRecorded reports that n is kept because its deletion could not be
// recorded, and returns the error for the period's outcome (the next
// period tries again).
func (c *Controller) notRecorded(ctx context.Context, n *corev1.Node, err error) error {
	err = fmt.Errorf("record the deletion of node %s in ConfigMap %s: %w", n.Name, c.record.key, err)
	klog.FromContext(ctx).Error(err, "Not deleting node although its instance is gone: its deletion could not be recorded for the deletion cap; next period retries", "node", klog.KObj(n))
	c.event(n, corev1.EventTypeWarning, ReasonDeletionNotRecorded, actionDelete,
		"Not deleting node %s although its instance is gone: the deletion cap's record could not be read or written, and no Node is deleted unrecorded; a later period retries: %v", n.Name, err)
	return err
}

// loadRecord reads the record into the ledger unless it is read already.
// A missing record starts empty. Without a store (tests) the ledger stays
// in memory.
func (c *Controller) loadRecord(ctx context.Context) error {
	if c.record == nil || c.record.obj != nil {
		return nil
	}
	cm := &corev1.ConfigMap{}
	err := c.record.reader.Get(ctx, c.record.key, cm)
	switch {
	case apierrors.IsNotFound(err):
		klog.FromContext(ctx).V(2).Info("No deletion record yet; starting with an empty window", "record", c.record.key)
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.record.key.Namespace, Name: c.record.key.Name}}
	case err != nil:
		return fmt.Errorf("read: %w", err)
	}
	now := c.clock.Now()
	done, perr := parseRecord(cm, now, c.cfg.Cap.Window)
	c.record.obj = cm
	c.ledger.done, c.ledger.heldUntil, c.ledger.heldWhy = done, time.Time{}, ""
	if perr != nil {
		// Malformed: what it counted is unknown, so the safe reading is
		// the worst one, a full window. Every deletion it may have
		// counted happened before now, so all of them have left the
		// window a window from now: until then nothing is deleted, which
		// never exceeds the cap. Then the next deletion overwrites it
		// with a well-formed record. (Reading it as empty could delete a
		// cap's worth at once on top of a full window.)
		c.ledger.heldUntil = now.Add(c.cfg.Cap.Window)
		c.ledger.heldWhy = fmt.Sprintf("the deletion record, ConfigMap %s, is malformed: %v", c.record.key, perr)
		klog.FromContext(ctx).Error(perr, "Deletion record is malformed; counting the window as full until a window has passed", "record", c.record.key, "until", c.ledger.heldUntil)
		c.recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonRecordMalformed, actionReadRecord,
			"The node deletion cap's record is malformed: %v; no Node is deleted until %s, then a well-formed record replaces it", perr, c.ledger.heldUntil.UTC().Format(time.RFC3339))
	}
	return nil
}

// saveRecord writes done as the record, conditional on the version last
// read, and keeps the version written. Whatever the outcome but success,
// the record is read again before the next deletion: a conflict means
// another wrote it, and a failed write may have landed all the same.
func (c *Controller) saveRecord(ctx context.Context, done []deletion) error {
	if c.record == nil {
		return nil
	}
	data, err := encodeRecord(done)
	if err != nil {
		return err
	}
	cm := c.record.obj.DeepCopy()
	c.record.obj = nil
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[LabelManagedBy] = ManagedBy
	cm.Labels[LabelComponent] = recordComponent
	cm.Data = map[string]string{RecordKey: data}
	if cm.ResourceVersion == "" {
		err = c.record.writer.Create(ctx, cm)
	} else {
		err = c.record.writer.Update(ctx, cm)
	}
	switch {
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || (cm.ResourceVersion != "" && apierrors.IsNotFound(err)):
		return fmt.Errorf("write: %w: %w", errRecordStale, err)
	case err != nil:
		return fmt.Errorf("write: %w", err)
	}
	// A dry run (observe mode) returns no resourceVersion: the next write
	// then creates it again, as nothing was stored.
	c.record.obj = cm
	return nil
}

// encodeRecord is the data of the record holding done, oldest first.
func encodeRecord(done []deletion) (string, error) {
	entries := make([]recordEntry, 0, len(done))
	for _, d := range done {
		entries = append(entries, recordEntry{Time: d.at.UTC().Format(time.RFC3339Nano), Node: d.node, UID: string(d.uid), Zone: d.zone})
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return "", fmt.Errorf("encode the deletion record: %w", err)
	}
	return string(b), nil
}

// parseRecord reads the deletions a record holds, pruned to the window
// ending at now. An error names the malformed field and its value. A
// ConfigMap never written (no resourceVersion) holds none.
func parseRecord(cm *corev1.ConfigMap, now time.Time, window time.Duration) ([]deletion, error) {
	if cm.ResourceVersion == "" && cm.Data == nil {
		return nil, nil
	}
	raw, ok := cm.Data[RecordKey]
	if !ok {
		return nil, fmt.Errorf("data[%q] is missing", RecordKey)
	}
	var entries []recordEntry
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		return nil, fmt.Errorf("data[%q]=%q: not a JSON list of deletions: %w", RecordKey, truncate(raw, 200), err)
	}
	cutoff := now.Add(-window)
	var done []deletion
	for i, e := range entries {
		field := fmt.Sprintf("data[%q][%d]", RecordKey, i)
		if e.Node == "" {
			return nil, fmt.Errorf("%s.node=%q: must name the deleted Node", field, e.Node)
		}
		at, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			return nil, fmt.Errorf("%s.time=%q: %w", field, e.Time, err)
		}
		if at.After(now.Add(window)) {
			// It would hold its slot for longer than any window: a clock
			// or a writer gone wrong, not a deletion.
			return nil, fmt.Errorf("%s.time=%q: more than the window (%s) after now (%s)", field, e.Time, window, now.UTC().Format(time.RFC3339))
		}
		if at.Before(cutoff) {
			continue
		}
		done = append(done, deletion{at: at, node: e.Node, uid: types.UID(e.UID), zone: e.Zone})
	}
	return done, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
