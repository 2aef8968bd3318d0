package objcache

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletNode is a Node as the API server sends one: every string its own
// copy, as a decoder makes them.
func kubeletNode(name string) *corev1.Node {
	c := func(s string) string { return strings.Clone(s) }
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{c(corev1.LabelHostname): c(name), c(corev1.LabelTopologyZone): c("zone-a"), c("pool"): c("general")},
			Annotations: map[string]string{c("node.alpha.kubernetes.io/ttl"): c("0"), c("alpha.kubernetes.io/provided-node-ip"): c("10.0.0.7")},
		},
		Spec: corev1.NodeSpec{ProviderID: "localcloud://" + name, Taints: []corev1.Taint{{Key: c("dedicated"), Value: c("infra"), Effect: corev1.TaintEffect(c("NoSchedule"))}}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeConditionType(c("Ready")), Status: corev1.ConditionStatus(c("True")),
				Reason: c("KubeletReady"), Message: c("kubelet is posting ready status")}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeAddressType(c("InternalIP")), Address: c("10.0.0.7")}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: c("v1.36.3"), OSImage: c("Debian GNU/Linux 12"), MachineID: c(name + "-machine")},
			Phase:     corev1.NodePhase(c("Running")),
		},
	}
}

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestInternerSharesRepeatedNodeStrings(t *testing.T) {
	in := newInterner()
	a, b := kubeletNode("node-a"), kubeletNode("node-b")
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	in.node(a)
	in.node(b)
	if fmt.Sprint(a) != fmt.Sprint(wantA) || fmt.Sprint(b) != fmt.Sprint(wantB) {
		t.Fatalf("interning changed a Node:\n%v\nwant\n%v", a, wantA)
	}
	key := func(m map[string]string, k string) string {
		for mk := range m {
			if mk == k {
				return mk
			}
		}
		t.Fatalf("no key %q in %v", k, m)
		return ""
	}
	shared := map[string][2]string{
		"zone label key":      {key(a.Labels, corev1.LabelTopologyZone), key(b.Labels, corev1.LabelTopologyZone)},
		"zone label value":    {a.Labels[corev1.LabelTopologyZone], b.Labels[corev1.LabelTopologyZone]},
		"annotation key":      {key(a.Annotations, "node.alpha.kubernetes.io/ttl"), key(b.Annotations, "node.alpha.kubernetes.io/ttl")},
		"taint key":           {a.Spec.Taints[0].Key, b.Spec.Taints[0].Key},
		"condition reason":    {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
		"condition message":   {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
		"condition type":      {string(a.Status.Conditions[0].Type), string(b.Status.Conditions[0].Type)},
		"address type":        {string(a.Status.Addresses[0].Type), string(b.Status.Addresses[0].Type)},
		"kubelet version":     {a.Status.NodeInfo.KubeletVersion, b.Status.NodeInfo.KubeletVersion},
		"OS image":            {a.Status.NodeInfo.OSImage, b.Status.NodeInfo.OSImage},
		"phase":               {string(a.Status.Phase), string(b.Status.Phase)},
		"pool label (custom)": {a.Labels["pool"], b.Labels["pool"]},
	}
	for what, p := range shared {
		if !same(p[0], p[1]) {
			t.Errorf("%s %q: two copies after interning", what, p[0])
		}
	}
	// What names the one Node stays out of the table: the hostname label,
	// annotation values, addresses, machine IDs.
	for _, s := range []string{"node-a", "node-b", "10.0.0.7", "node-a-machine"} {
		if _, ok := in.m[s]; ok {
			t.Errorf("%q, which names one Node, went into the table", s)
		}
	}
}

func TestInternerIsBounded(t *testing.T) {
	in := newInterner()
	for i := range maxInterned + 100 {
		in.str(fmt.Sprintf("value-%d", i))
	}
	if len(in.m) != maxInterned {
		t.Fatalf("table holds %d strings, want the bound %d", len(in.m), maxInterned)
	}
	// Past the bound a string comes back as it was, equal and usable.
	s := strings.Clone("late-value")
	if got := in.str(s); got != s || !same(got, s) {
		t.Fatalf("str past the bound = %q", got)
	}
	long := strings.Repeat("x", maxInternLen+1)
	if got := in.str(long); !same(got, long) {
		t.Fatal("a long string was copied")
	}
}

// The transform the caches use interns: two Nodes through one
// Transform share their strings; through two transforms (two
// managers) they do not share a table.
func TestTransformInternsNodes(t *testing.T) {
	tr := Transform()
	a, b := kubeletNode("node-a"), kubeletNode("node-b")
	if _, err := tr(a); err != nil {
		t.Fatal(err)
	}
	if _, err := tr(b); err != nil {
		t.Fatal(err)
	}
	if !same(a.Status.Conditions[0].Message, b.Status.Conditions[0].Message) {
		t.Fatal("the cache transform did not share the condition message")
	}
	c := kubeletNode("node-c")
	if _, err := Transform()(c); err != nil {
		t.Fatal(err)
	}
	if same(a.Status.Conditions[0].Message, c.Status.Conditions[0].Message) {
		t.Fatal("two transforms share one table")
	}
}

// Nodes with equal capacity share one ResourceList; a different one, or
// one past the bound, is kept as it was; a DeepCopy (where every write
// starts) gets a map of its own.
func TestInternerSharesEqualResourceLists(t *testing.T) {
	in := newInterner()
	list := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	a, b, c := kubeletNode("a"), kubeletNode("b"), kubeletNode("c")
	a.Status.Capacity, b.Status.Capacity, c.Status.Capacity = list("4", "16Gi"), list("4", "16Gi"), list("8", "16Gi")
	in.node(a)
	in.node(b)
	in.node(c)
	if reflect.ValueOf(a.Status.Capacity).UnsafePointer() != reflect.ValueOf(b.Status.Capacity).UnsafePointer() {
		t.Fatal("equal capacities are two maps")
	}
	if reflect.ValueOf(a.Status.Capacity).UnsafePointer() == reflect.ValueOf(c.Status.Capacity).UnsafePointer() {
		t.Fatal("different capacities share a map")
	}
	if got := c.Status.Capacity[corev1.ResourceCPU]; got.String() != "8" {
		t.Fatalf("c's cpu = %s", got.String())
	}
	w := a.DeepCopy()
	w.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("2")
	if got := b.Status.Capacity[corev1.ResourceCPU]; got.String() != "4" {
		t.Fatalf("a write to a copy reached a shared list: b's cpu = %s", got.String())
	}
	if in.resources(nil) != nil {
		t.Fatal("an empty list was interned")
	}
}
