package localcloud

import (
	"slices"
	"testing"
	"unsafe"
)

// Load balancers with the same backends share one slice of providerIDs,
// and a providerID is one string wherever it appears; different backend
// lists keep their own order and content.
func TestBackendSetsShareRepeatedBackends(t *testing.T) {
	t.Parallel()
	b := newBackendSets()
	a1 := b.providerIDs([]string{"i-1", "i-2", "i-3"})
	a2 := b.providerIDs([]string{"i-1", "i-2", "i-3"})
	other := b.providerIDs([]string{"i-3", "i-1"})
	empty := b.providerIDs([]string{})
	if want := []string{ProviderID("i-1"), ProviderID("i-2"), ProviderID("i-3")}; !slices.Equal(a1, want) {
		t.Fatalf("providerIDs = %q, want %q", a1, want)
	}
	if unsafe.SliceData(a1) != unsafe.SliceData(a2) {
		t.Error("two load balancers with the same backends got a slice each")
	}
	if want := []string{ProviderID("i-3"), ProviderID("i-1")}; !slices.Equal(other, want) {
		t.Errorf("other list = %q, want %q", other, want)
	}
	if unsafe.StringData(other[0]) != unsafe.StringData(a1[2]) {
		t.Error("the providerID of i-3 was made twice")
	}
	if empty == nil || len(empty) != 0 {
		t.Errorf("no backends = %#v, want an empty, non-nil list (nil means unknown)", empty)
	}
}
