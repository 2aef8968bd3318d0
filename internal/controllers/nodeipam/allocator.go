package nodeipam

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam/cidrset"
)

// allocator is the controller's picture of which sub-CIDR belongs to which
// Node. One mutex serializes every change, so concurrent workers can never
// take the same sub-CIDR, and the bookkeeping maps always agree with the
// bitmaps of the sets.
type allocator struct {
	mu       sync.Mutex
	sets     []*cidrset.CIDRSet // one per cluster CIDR, in flag order
	reserved []int              // sub-CIDRs reserved in sets[i]
	nodes    map[string]*nodeCIDRs
	owners   map[netip.Prefix]string // pod CIDR (masked) → node name
	m        *metrics
}

// nodeCIDRs is what the allocator knows about one Node.
type nodeCIDRs struct {
	uid types.UID
	// seen are the pod CIDRs as last read from the Node, so that an
	// unchanged Node is recognised without re-parsing or re-reporting.
	seen []string
	// held are the sub-CIDRs this Node owns in the sets.
	held []netip.Prefix
	// pending is true while held was allocated by this controller but not
	// yet seen on the Node: the patch is in flight or its outcome unknown.
	pending bool
}

// problem is something wrong with a Node's existing pod CIDRs, reported as
// a Warning event and a metric by the controller.
type problem struct {
	reason string
	cidr   string
	detail string
}

func newAllocator(clusterCIDRs []netip.Prefix, maskSizes []int, serviceCIDRs []netip.Prefix, m *metrics) (*allocator, error) {
	a := &allocator{nodes: map[string]*nodeCIDRs{}, owners: map[netip.Prefix]string{}, m: m}
	for i, cidr := range clusterCIDRs {
		s, err := cidrset.New(cidr, maskSizes[i])
		if err != nil {
			return nil, err
		}
		n := 0
		for _, svc := range serviceCIDRs {
			r, err := s.Reserve(svc)
			if err != nil {
				return nil, fmt.Errorf("reserve service range %s in %s: %w", svc, cidr, err)
			}
			n += r
		}
		if n >= s.Size() {
			return nil, fmt.Errorf("service range %v covers all of cluster CIDR %s: %w", serviceCIDRs, cidr, ErrOverlap)
		}
		a.sets = append(a.sets, s)
		a.reserved = append(a.reserved, n)
	}
	a.updateGauges()
	return a, nil
}

// setFor returns the index of the set of p's IP family, or -1.
func (a *allocator) setFor(p netip.Prefix) int {
	for i, s := range a.sets {
		if s.ClusterCIDR().Addr().Is4() == p.Addr().Is4() {
			return i
		}
	}
	return -1
}

// podCIDRs returns the Node's pod CIDRs, falling back to the singular field
// for objects written by old clients.
func podCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

// observe records the pod CIDRs a Node already carries, occupying them so
// they are never handed out again. It returns the problems found the first
// time this incarnation of the Node is seen with these CIDRs; an unchanged
// Node costs a map lookup and reports nothing.
func (a *allocator) observe(n *corev1.Node) []problem {
	cidrs := podCIDRs(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.nodes[n.Name]; e != nil {
		if e.uid == n.UID && !e.pending && slices.Equal(e.seen, cidrs) {
			return nil
		}
		// A different incarnation, a pending allocation now superseded by
		// what the Node really carries, or changed CIDRs: start over.
		a.releaseLocked(n.Name)
	}
	e := &nodeCIDRs{uid: n.UID, seen: slices.Clone(cidrs)}
	var problems []problem
	for _, raw := range cidrs {
		p, err := netip.ParsePrefix(raw)
		if err != nil {
			problems = append(problems, problem{reason: ReasonInvalidPodCIDR, cidr: raw, detail: err.Error()})
			continue
		}
		p = p.Masked()
		i := a.setFor(p)
		if i < 0 {
			problems = append(problems, problem{reason: ReasonPodCIDROutsideCluster, cidr: raw, detail: "no --cluster-cidr of its IP family"})
			continue
		}
		if owner, ok := a.owners[p]; ok && owner != n.Name {
			problems = append(problems, problem{reason: ReasonPodCIDRCollision, cidr: raw, detail: "already held by node " + owner})
			continue
		}
		if err := a.sets[i].Occupy(p); err != nil {
			reason := ReasonInvalidPodCIDR
			if errors.Is(err, cidrset.ErrOutsideClusterCIDR) {
				reason = ReasonPodCIDROutsideCluster
			}
			problems = append(problems, problem{reason: reason, cidr: raw, detail: err.Error()})
			continue
		}
		a.owners[p] = n.Name
		e.held = append(e.held, p)
	}
	a.nodes[n.Name] = e
	a.updateGauges()
	return problems
}

// allocate takes one sub-CIDR of every cluster CIDR for a Node that has
// none, in flag order. A retry for the same Node incarnation gets the same
// CIDRs again, so a patch whose outcome was unknown is repeated, not
// doubled. On exhaustion nothing stays taken.
func (a *allocator) allocate(n *corev1.Node) ([]netip.Prefix, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.nodes[n.Name]; e != nil {
		if e.uid == n.UID && e.pending {
			return slices.Clone(e.held), nil
		}
		a.releaseLocked(n.Name)
	}
	out := make([]netip.Prefix, 0, len(a.sets))
	for _, s := range a.sets {
		p, err := s.AllocateNext()
		if err != nil {
			for _, q := range out {
				_ = a.sets[a.setFor(q)].Release(q)
			}
			a.updateGauges()
			return nil, fmt.Errorf("allocate from %s: %w", s, err)
		}
		out = append(out, p)
	}
	for _, p := range out {
		a.owners[p] = n.Name
	}
	a.nodes[n.Name] = &nodeCIDRs{uid: n.UID, held: slices.Clone(out), pending: true}
	a.updateGauges()
	return out, nil
}

// abandon returns a pending allocation whose patch certainly did not apply.
func (a *allocator) abandon(name string, uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.nodes[name]; e != nil && e.uid == uid && e.pending {
		a.releaseLocked(name)
		a.updateGauges()
	}
}

// release returns a deleted Node's sub-CIDRs. It reports whether anything
// was freed.
func (a *allocator) release(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.nodes[name] == nil {
		return false
	}
	a.releaseLocked(name)
	a.updateGauges()
	return true
}

func (a *allocator) releaseLocked(name string) {
	e := a.nodes[name]
	if e == nil {
		return
	}
	for _, p := range e.held {
		if a.owners[p] != name {
			continue // a collision: the other Node keeps it
		}
		delete(a.owners, p)
		if i := a.setFor(p); i >= 0 {
			_ = a.sets[i].Release(p) // p was occupied in this set, so it is inside it
		}
	}
	delete(a.nodes, name)
}

// updateGauges publishes usage per family. It must be called with mu held.
func (a *allocator) updateGauges() {
	if a.m == nil {
		return
	}
	for i, s := range a.sets {
		fam := familyIPv6
		if s.ClusterCIDR().Addr().Is4() {
			fam = familyIPv4
		}
		used := s.Used()
		a.m.allocated.WithLabelValues(fam).Set(float64(used - a.reserved[i]))
		a.m.available.WithLabelValues(fam).Set(float64(s.Size() - used))
	}
}

// holding is what the allocator holds for a Node, for explain: its
// sub-CIDRs and whether they await the write to the Node; known is false
// for a Node it holds nothing for.
func (a *allocator) holding(name string) (held []netip.Prefix, pending, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.nodes[name]
	if e == nil {
		return nil, false, false
	}
	return slices.Clone(e.held), e.pending, true
}

// clusterCIDRs names the ranges allocated from, for explain.
func (a *allocator) clusterCIDRs() []string {
	out := make([]string, len(a.sets))
	for i, s := range a.sets {
		out[i] = s.ClusterCIDR().String()
	}
	return out
}
