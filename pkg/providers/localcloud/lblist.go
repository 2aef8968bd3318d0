package localcloud

import (
	"hash/maphash"
	"slices"
)

// backendSets converts the backends of one listing's load balancers to
// providerIDs, sharing what repeats: every providerID string is made once
// per listing, and load balancers with the same backends (in a cluster,
// nearly all of them: every load balancer targets every eligible node)
// share one slice. The callers of cloud.LoadBalancerLister only read the
// backends, so sharing is safe; 300 load balancers over 5,000 nodes then
// hold 5,000 strings instead of 1.5 million.
type backendSets struct {
	seed  maphash.Seed
	ids   map[string]string
	lists map[uint64][]backendSet
}

// backendSet is one distinct list of instance ids and its providerIDs.
type backendSet struct {
	ids, providerIDs []string
}

func newBackendSets() *backendSets {
	return &backendSets{seed: maphash.MakeSeed(), ids: map[string]string{}, lists: map[uint64][]backendSet{}}
}

// providerIDs returns the providerIDs of the instance ids, in their order;
// never nil, since the cloud always reports a load balancer's backends.
func (b *backendSets) providerIDs(ids []string) []string {
	var h maphash.Hash
	h.SetSeed(b.seed)
	for _, id := range ids {
		_, _ = h.WriteString(id)
		_ = h.WriteByte(0)
	}
	sum := h.Sum64()
	for _, s := range b.lists[sum] {
		if slices.Equal(s.ids, ids) {
			return s.providerIDs
		}
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		pid, ok := b.ids[id]
		if !ok {
			pid = ProviderID(id)
			b.ids[id] = pid
		}
		out[i] = pid
	}
	// The ids are kept to tell a hash collision from a repeat; the page
	// they were decoded from is not, as they are separate strings.
	b.lists[sum] = append(b.lists[sum], backendSet{ids: ids, providerIDs: out})
	return out
}
