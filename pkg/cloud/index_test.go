package cloud

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nodeNamed(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestInstanceIndexLookup(t *testing.T) {
	t.Parallel()
	x := NewInstanceIndex([]Instance{
		{ProviderID: "p://1", Name: "a"},
		{ProviderID: "p://2", Name: "dup"},
		{ProviderID: "p://3", Name: "dup"},
	})
	// By providerID, even when the name is ambiguous.
	if inst, ok, err := x.Lookup(nodeNamed("dup", "p://3")); err != nil || !ok || inst.ProviderID != "p://3" {
		t.Errorf("by providerID: %v %v %v", inst, ok, err)
	}
	// By name for a node without providerID.
	if inst, ok, err := x.Lookup(nodeNamed("a", "")); err != nil || !ok || inst.ProviderID != "p://1" {
		t.Errorf("by name: %v %v %v", inst, ok, err)
	}
	// An ambiguous name is an error, not a guess.
	if _, _, err := x.Lookup(nodeNamed("dup", "")); !errors.Is(err, ErrAmbiguousName) {
		t.Errorf("ambiguous name: %v", err)
	}
	// Absent from the list: not found, no error.
	if _, ok, err := x.Lookup(nodeNamed("gone", "p://9")); ok || err != nil {
		t.Errorf("absent: %v %v", ok, err)
	}
}
