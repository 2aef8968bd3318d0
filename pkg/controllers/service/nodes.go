package service

import (
	"maps"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// nodeSet is an immutable view of the eligible nodes. version changes
// whenever the identity of the set (names, providerIDs) changes, so two
// views with the same version are equal without comparing them.
type nodeSet struct {
	version uint64
	// nodes are the eligible nodes' latest objects, sorted by name. They
	// are shared with the informer cache: read, never modify.
	nodes []*v1.Node
	// ids maps node name to providerID: what a load balancer's node set is
	// compared by (upstream's nodesSufficientlyEqual).
	ids map[string]string
}

// identity returns the view without the Node objects: what a load
// balancer's record keeps. Holding the objects there would pin an old copy
// of every Node per recorded version for as long as the record lives.
func (s nodeSet) identity() nodeSet {
	return nodeSet{version: s.version, ids: s.ids}
}

// sameNodes compares two views by their identity.
func sameNodes(a, b nodeSet) bool {
	return a.version == b.version || maps.Equal(a.ids, b.ids)
}

// nodeTracker follows the node informer and serves the eligible node set
// without listing (and copying) every node on every sync.
type nodeTracker struct {
	mu      sync.Mutex
	all     map[string]*v1.Node
	version uint64
	current *nodeSet // nil when it must be rebuilt
}

func newNodeTracker() *nodeTracker {
	return &nodeTracker{all: map[string]*v1.Node{}}
}

// identity is what a load balancer cares about in one node.
type identity struct {
	eligible   bool
	providerID string
}

func identityOf(n *v1.Node) identity {
	if n == nil {
		return identity{}
	}
	return identity{eligible: nodeEligible(n), providerID: n.Spec.ProviderID}
}

// upsert records the latest object of a node.
func (t *nodeTracker) upsert(n *v1.Node) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.all[n.Name]
	t.all[n.Name] = n
	if old == nil || identityOf(old) != identityOf(n) {
		t.version++
	}
	// Rebuild even when the identity is unchanged: providers receive the
	// latest objects (their addresses, for instance).
	t.current = nil
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
	t.current = nil
}

// snapshot returns the eligible node set.
func (t *nodeTracker) snapshot() nodeSet {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current != nil {
		return *t.current
	}
	s := &nodeSet{version: t.version, ids: map[string]string{}}
	for _, n := range t.all {
		if nodeEligible(n) {
			s.nodes = append(s.nodes, n)
			s.ids[n.Name] = n.Spec.ProviderID
		}
	}
	sort.Slice(s.nodes, func(i, j int) bool { return s.nodes[i].Name < s.nodes[j].Name })
	t.current = s
	return *s
}

// nodeNames lists up to limit names for logs and events.
func nodeNames(nodes []*v1.Node, limit int) []string {
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
