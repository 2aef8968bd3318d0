package service

import (
	"maps"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// nodeSet is an immutable view of the eligible nodes. version changes
// whenever the identity of the set (names, providerIDs) changes, so two
// views with the same version are equal without comparing them.
type nodeSet struct {
	version uint64
	// nodes are the eligible nodes' latest objects, sorted by name. They
	// are shared with the informer cache: read, never modify.
	nodes []*corev1.Node
	// ids maps node name to providerID: what a load balancer's node set is
	// compared by (upstream's nodesSufficientlyEqual).
	ids map[string]string
	// since is when the first node change that made ids differ from the
	// previous set happened; zero when undated. The node-sync latency is
	// measured from it.
	since time.Time
}

// identity returns the view without the Node objects: what a load
// balancer's record keeps. Holding the objects there would pin an old copy
// of every Node per recorded version for as long as the record lives.
func (s nodeSet) identity() nodeSet {
	return nodeSet{version: s.version, ids: s.ids, since: s.since}
}

// sameNodes compares two views by their identity.
func sameNodes(a, b nodeSet) bool {
	return a.version == b.version || maps.Equal(a.ids, b.ids)
}

// nodeTracker follows the node informer and serves the eligible node set
// without listing (and copying) every node on every sync.
//
// What it hands out is shared, never copied: every snapshot of one version
// carries the same ids map, so the records of hundreds of load balancers
// applied at that version hold one map between them, not one each. A
// heartbeat (a new object, same identity) rebuilds only the slice of
// object pointers, in the order kept since the version began: no sort, no
// map. At idle a heartbeat costs a map store; the slice is rebuilt on the
// next snapshot only.
type nodeTracker struct {
	mu      sync.Mutex
	all     map[string]*corev1.Node
	version uint64
	// ids and names describe version: the eligible nodes' providerIDs and
	// their sorted names. Both are replaced, never modified, when the
	// version changes, because snapshots share them.
	ids   map[string]string
	names []string
	// identityStale: ids and names must be rebuilt for a new version.
	identityStale bool
	current       *nodeSet // nil when the objects must be gathered again
	// backend excludes the Nodes a hybrid cluster's ownership policy keeps
	// out of load balancers (backends.go); nil excludes none.
	backend func(*corev1.Node) bool
	// now dates node changes; nil leaves node sets undated.
	now func() time.Time
	// changedAt is when the first change not yet folded into ids happened;
	// since is when the change that produced ids happened.
	changedAt, since time.Time
}

func newNodeTracker() *nodeTracker {
	return &nodeTracker{all: map[string]*corev1.Node{}, identityStale: true}
}

// eligible is nodeEligible and the ownership policy's say.
func (t *nodeTracker) eligible(n *corev1.Node) bool {
	return nodeEligible(n) && (t.backend == nil || t.backend(n))
}

// identity is what a load balancer cares about in one node.
type identity struct {
	eligible   bool
	providerID string
}

func (t *nodeTracker) identityOf(n *corev1.Node) identity {
	if n == nil {
		return identity{}
	}
	return identity{eligible: t.eligible(n), providerID: n.Spec.ProviderID}
}

// upsert records the latest object of a node.
func (t *nodeTracker) upsert(n *corev1.Node) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.all[n.Name]
	t.all[n.Name] = n
	if old == nil || t.identityOf(old) != t.identityOf(n) {
		t.version++
		t.markChanged()
	}
	// Gather again even when the identity is unchanged: providers receive
	// the latest objects (their addresses, for instance).
	t.current = nil
}

// seed adds the nodes the tracker has not heard of (the cache's view at
// the first sync); a node it knows keeps the object its events brought.
// It returns how many it added.
func (t *nodeTracker) seed(nodes []corev1.Node) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	added := 0
	for i := range nodes {
		n := &nodes[i]
		if _, ok := t.all[n.Name]; ok {
			continue
		}
		t.all[n.Name] = n
		added++
	}
	if added > 0 {
		t.version++
		t.markChanged()
		t.current = nil
	}
	return added
}

// get returns the latest object of a node, nil when none is known.
func (t *nodeTracker) get(name string) *corev1.Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.all[name]
}

// remove forgets a deleted node.
func (t *nodeTracker) remove(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.all[name]; !ok {
		return
	}
	delete(t.all, name)
	t.version++
	t.markChanged()
	t.current = nil
}

// markChanged notes an identity change, dated by the first one since ids
// were last rebuilt: the later ones in a burst wait on the same update.
func (t *nodeTracker) markChanged() {
	t.identityStale = true
	if t.changedAt.IsZero() && t.now != nil {
		t.changedAt = t.now()
	}
}

// snapshot returns the eligible node set.
func (t *nodeTracker) snapshot() nodeSet {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current != nil {
		return *t.current
	}
	if t.identityStale {
		prev := t.ids
		t.ids, t.names = map[string]string{}, nil
		for _, n := range t.all {
			if t.eligible(n) {
				t.ids[n.Name] = n.Spec.ProviderID
				t.names = append(t.names, n.Name)
			}
		}
		sort.Strings(t.names)
		t.identityStale = false
		// A change that left the eligible set as it was (a node joining
		// uninitialized) does not restart the latency of an update still
		// owed for an earlier one.
		if !maps.Equal(prev, t.ids) {
			t.since = t.changedAt
		}
		t.changedAt = time.Time{}
	}
	// The eligible names are those of the version: a node whose object
	// changed without changing its identity is still eligible.
	nodes := make([]*corev1.Node, len(t.names))
	for i, name := range t.names {
		nodes[i] = t.all[name]
	}
	t.current = &nodeSet{version: t.version, nodes: nodes, ids: t.ids, since: t.since}
	return *t.current
}

// nodeNames lists up to limit names for logs and events.
func nodeNames(nodes []*corev1.Node, limit int) []string {
	out := make([]string, 0, min(len(nodes), limit+1))
	for i, n := range nodes {
		if i == limit {
			out = append(out, "...")
			break
		}
		out = append(out, n.Name)
	}
	return out
}
