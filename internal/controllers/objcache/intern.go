package objcache

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Bounds of a cache's string table.
const (
	// maxInterned is the most distinct strings one table holds. Past it,
	// strings are kept as decoded: a cluster with more distinct label
	// values than this loses some sharing, never correctness.
	maxInterned = 8192
	// maxInternLen leaves long strings (a condition message quoting an
	// error, a JSON annotation) as they are: they are rarely repeated.
	maxInternLen = 256
)

// interner shares one copy of the strings that many cached Nodes repeat.
// Every Node of a cluster carries the same label and annotation keys, the
// same zone, region and instance-type values across a pool, the kubelet's
// condition types, reasons and messages, and the same kernel, OS image and
// kubelet version; decoding gives each Node its own copy of each, about a
// quarter of what a cached kwok Node weighs. One table per cache (it lives
// in the transform's closure), shared by the informers' goroutines.
type interner struct {
	mu sync.Mutex
	m  map[string]string
	// lists holds one ResourceList per distinct content: the Nodes of one
	// instance type report the same capacity and allocatable, and a
	// three-entry map of Quantities weighs some 600 bytes. Cached objects
	// are read, never changed in place (a write starts from a DeepCopy,
	// which copies the map), so Nodes can share it.
	lists map[string]corev1.ResourceList
}

func newInterner() *interner {
	return &interner{m: map[string]string{}, lists: map[string]corev1.ResourceList{}}
}

// resources returns the table's ResourceList equal to l, adding l when
// there is none and the table has room.
func (in *interner) resources(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		q := l[corev1.ResourceName(k)]
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(q.String())
		b.WriteByte(';')
	}
	key := b.String()
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.lists[key]; ok {
		return v
	}
	if len(in.lists) < maxInterned {
		in.lists[key] = l
	}
	return l
}

func (in *interner) str(s string) string {
	if s == "" || len(s) > maxInternLen {
		return s
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.m[s]; ok {
		return v
	}
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	return s
}

// node interns n's repeated strings in place. Values that name the Node
// itself (its name, UID, addresses, provider ID, pod CIDRs, machine and
// boot IDs, annotation values) are left alone.
func (in *interner) node(n *corev1.Node) {
	if len(n.Labels) > 0 {
		labels := make(map[string]string, len(n.Labels))
		for k, v := range n.Labels {
			// The hostname label's value names the one Node: interning
			// it would only fill the table.
			if k != corev1.LabelHostname {
				v = in.str(v)
			}
			labels[in.str(k)] = v
		}
		n.Labels = labels
	}
	if len(n.Annotations) > 0 {
		annotations := make(map[string]string, len(n.Annotations))
		for k, v := range n.Annotations {
			annotations[in.str(k)] = v
		}
		n.Annotations = annotations
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		t.Key, t.Value, t.Effect = in.str(t.Key), in.str(t.Value), corev1.TaintEffect(in.str(string(t.Effect)))
	}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.Type = corev1.NodeConditionType(in.str(string(c.Type)))
		c.Status = corev1.ConditionStatus(in.str(string(c.Status)))
		c.Reason, c.Message = in.str(c.Reason), in.str(c.Message)
	}
	for i := range n.Status.Addresses {
		a := &n.Status.Addresses[i]
		a.Type = corev1.NodeAddressType(in.str(string(a.Type)))
	}
	ni := &n.Status.NodeInfo
	ni.KernelVersion, ni.OSImage, ni.ContainerRuntimeVersion = in.str(ni.KernelVersion), in.str(ni.OSImage), in.str(ni.ContainerRuntimeVersion)
	ni.KubeletVersion = in.str(ni.KubeletVersion)
	ni.OperatingSystem, ni.Architecture = in.str(ni.OperatingSystem), in.str(ni.Architecture)
	n.Status.Phase = corev1.NodePhase(in.str(string(n.Status.Phase)))
	n.Status.Capacity = in.resources(n.Status.Capacity)
	n.Status.Allocatable = in.resources(n.Status.Allocatable)
}
