package service

import (
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// lbState is what the controller last applied to one Service's load
// balancer. It lets a sync tell a Service change (EnsureLoadBalancer) from
// a node change (UpdateLoadBalancer with the hosts only) from nothing to
// do (no cloud call). It lives in memory: after a restart every Service is
// ensured once, which providers make cheap when nothing differs.
type lbState struct {
	uid     types.UID
	applied *corev1.Service // the Service as last ensured; never modified
	status  corev1.LoadBalancerStatus
	nodes   nodeSet
	// unserved are the Service's IP families its load balancer does not
	// serve (families.go), said in the Serving condition.
	unserved []corev1.IPFamily
	// targets says what the load balancer targets. With endpoint targets
	// endpoints is the set last applied and nodes is unused: the node
	// pass leaves the load balancer alone. fallback says why a Service
	// that needs or asks for endpoint targets got node targets.
	targets   targets
	endpoints cloud.EndpointSet
	fallback  string
}

type stateStore struct {
	mu       sync.Mutex
	byKey    map[types.NamespacedName]*lbState
	retrying map[types.NamespacedName]bool
	// written holds, for the Service being synced, the object as the API
	// server answered the sync's last write: fresher than the cache, which
	// has not seen the write yet, so that the conditions written after the
	// sync are compared with what the API server has, not with a stale
	// copy (which would cost a second, empty write).
	written map[types.NamespacedName]*corev1.Service
	// syncing counts the syncs under way per key (see begin).
	syncing map[types.NamespacedName]int
}

func newStateStore() *stateStore {
	return &stateStore{byKey: map[types.NamespacedName]*lbState{}, retrying: map[types.NamespacedName]bool{},
		written: map[types.NamespacedName]*corev1.Service{}, syncing: map[types.NamespacedName]int{}}
}

// begin marks a sync of key as under way until the returned func runs. A
// node pass meanwhile queues key again (outdated): the sync applies the
// node set it read at its start, which may be older than the pass's, and
// until it records its state nothing shows that. Without this, a node
// that joined during a Service's first ensure (no record yet for the pass
// to compare) stayed out of its load balancer until the next node change.
// Queued while its sync runs, the key is synced once more after it.
func (s *stateStore) begin(key types.NamespacedName) (end func()) {
	s.mu.Lock()
	s.syncing[key]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.syncing[key]--; s.syncing[key] <= 0 {
			delete(s.syncing, key)
		}
	}
}

// wrote records the API server's answer to a write of a Service.
func (s *stateStore) wrote(svc *corev1.Service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] = svc
}

// takeWritten returns and forgets the last answer recorded for key; nil
// when the sync wrote nothing.
func (s *stateStore) takeWritten(key types.NamespacedName) *corev1.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	svc := s.written[key]
	delete(s.written, key)
	return svc
}

func (s *stateStore) get(key types.NamespacedName) *lbState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[key]
}

// set replaces a key's state; states are never mutated once stored.
func (s *stateStore) set(key types.NamespacedName, st *lbState) {
	st.nodes = st.nodes.identity()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byKey[key] = st
}

func (s *stateStore) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byKey, key)
	delete(s.retrying, key)
	delete(s.written, key)
}

// setRetrying remembers that the last ensure was told to come back later,
// so that the retry does not announce itself with another event.
func (s *stateStore) setRetrying(key types.NamespacedName, v bool) (was bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was = s.retrying[key]
	if v {
		s.retrying[key] = true
	} else {
		delete(s.retrying, key)
	}
	return was
}

// outdated returns the keys whose applied node set differs from cur, and
// those whose sync is under way (see begin).
func (s *stateStore) outdated(cur nodeSet) []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []types.NamespacedName
	for k, st := range s.byKey {
		if s.syncing[k] == 0 && st.targets == targetNodes && !sameNodes(st.nodes, cur) {
			keys = append(keys, k)
		}
	}
	for k := range s.syncing {
		keys = append(keys, k)
	}
	return keys
}

func (s *stateStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}

// all returns every key's current state; states are immutable, so a later
// forgetIf can tell whether one was replaced meanwhile.
func (s *stateStore) all() map[types.NamespacedName]*lbState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.byKey)
}

// forgetIf drops a key's state if it is still st, so that a sync that
// completed meanwhile is not undone.
func (s *stateStore) forgetIf(key types.NamespacedName, st *lbState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey[key] != st {
		return false
	}
	delete(s.byKey, key)
	return true
}
