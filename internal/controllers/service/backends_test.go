package service

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/internal/ownership"
)

// TestForeignNodesAreNoBackends: under an ownership policy for the fake
// platform, a Node of another platform (by providerID or annotation) is
// left out of the node set, unless foreign backends are asked for; a Node
// naming no platform stays in, as upstream keeps it. Without a policy
// every Node is in.
func TestForeignNodesAreNoBackends(t *testing.T) {
	t.Parallel()
	pol, err := ownership.New([]string{"fake"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*corev1.Node{
		node("own"),
		node("onprem", func(n *corev1.Node) { n.Spec.ProviderID = "onprem://rack/onprem" }),
		node("edge", func(n *corev1.Node) {
			n.Spec.ProviderID = ""
			n.Annotations = map[string]string{ownership.AnnotationPlatform: "edge"}
		}),
		node("unnamed", func(n *corev1.Node) { n.Spec.ProviderID = "" }),
	}
	for _, tc := range []struct {
		name    string
		pol     ownership.Policy
		foreign bool
		want    []string
	}{
		{"policy", pol, false, []string{"own", "unnamed"}},
		{"policy, foreign backends", pol, true, []string{"edge", "onprem", "own", "unnamed"}},
		{"no policy", ownership.Policy{}, false, []string{"edge", "onprem", "own", "unnamed"}},
	} {
		tr := newNodeTracker()
		tr.backend = backendPolicy(tc.pol, tc.foreign)
		for _, n := range nodes {
			tr.upsert(n)
		}
		if got := names(tr.snapshot().nodes); !slices.Equal(got, tc.want) {
			t.Errorf("%s: node set %v, want %v", tc.name, got, tc.want)
		}
	}
}
