package sandbox

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodNodes(t *testing.T) {
	node := func(name, ip string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if ip != "" {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		}
		return n
	}
	nodes := []*corev1.Node{node("node-0003", "127.1.0.3"), node("node-0001", "127.1.0.1"), node("node-0002", "127.1.0.2"), node("node-0004", "")}
	svc := &corev1.Service{}
	if got := slices.Sorted(maps.Keys(PodNodes(svc, nodes))); !slices.Equal(got, []string{"node-0001", "node-0002"}) {
		t.Fatalf("default placement: %v (want the first half, by name, of the nodes with an address)", got)
	}
	svc.Annotations = map[string]string{PodNodesAnnotation: "node-0003, node-0004"}
	if got := slices.Sorted(maps.Keys(PodNodes(svc, nodes))); !slices.Equal(got, []string{"node-0003", "node-0004"}) {
		t.Fatalf("annotated placement: %v", got)
	}
	if got := PodNodes(&corev1.Service{}, nil); len(got) != 0 {
		t.Fatalf("no nodes: %v", got)
	}
}
