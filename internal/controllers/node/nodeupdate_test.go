package node

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

func TestValidateProviderID(t *testing.T) {
	t.Parallel()
	for id, ok := range map[string]bool{
		"localcloud://i-0123":         true,
		"aws:///us-east-1a/i-0abc":    true,
		"gce://project/zone/name":     true,
		"azure:///subscriptions/x/vm": true,
		"":                            false,
		"i-0123":                      false,
		"://i-0123":                   false,
		"aws://":                      false,
		"aws:///":                     false,
		"lo cal://i-1":                false,
		"localcloud://i 1":            false,
		"local_cloud://i-1":           false,
	} {
		err := validateProviderID(id)
		if ok != (err == nil) {
			t.Errorf("validateProviderID(%q) = %v, want ok=%v", id, err, ok)
		}
		if err != nil && !errors.Is(err, errNoProviderID) && !errors.Is(err, errMalformedID) {
			t.Errorf("validateProviderID(%q): unexpected error kind %v", id, err)
		}
	}
}

func TestParseProvidedNodeIP(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"10.0.0.1":           true,
		"fd00::1":            true,
		"10.0.0.1,fd00::1":   true,
		"fd00::1,10.0.0.1":   true,
		"10.0.0.1,10.0.0.2":  false,
		"10.0.0.1,fd00::1,x": false,
		"0.0.0.0,fd00::1":    false,
		"":                   false,
		"not-an-ip":          false,
		"10.0.0.1 ":          false,
	} {
		_, err := parseProvidedNodeIP(s)
		if ok != (err == nil) {
			t.Errorf("parseProvidedNodeIP(%q) = %v, want ok=%v", s, err, ok)
		}
	}
}

func TestIsKubernetesLabel(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]bool{
		"kubernetes.io/x": true, "node.kubernetes.io/x": true, "k8s.io/x": true, "a.k8s.io/x": true,
		"example.com/x": false, "notkubernetes.io/x": false, "plain": false,
	} {
		if got := isKubernetesLabel(k); got != want {
			t.Errorf("isKubernetesLabel(%q) = %v, want %v", k, got, want)
		}
	}
}

// TestCheckMetadataProviderIDOptional: an empty providerID is accepted
// only from the legacy adapter (idOptional), and never overrides one the
// Node already has.
func TestCheckMetadataProviderIDOptional(t *testing.T) {
	t.Parallel()
	bare := &corev1.Node{}
	withID := &corev1.Node{Spec: corev1.NodeSpec{ProviderID: "kubelet://set"}}
	noID := &cloudprovider.InstanceMetadata{}
	if err := checkMetadata(bare, noID, false); !errors.Is(err, errNoProviderID) {
		t.Errorf("InstancesV2 without providerID: %v, want errNoProviderID", err)
	}
	if err := checkMetadata(bare, noID, true); err != nil {
		t.Errorf("legacy provider without instance IDs: %v, want accepted", err)
	}
	if err := checkMetadata(withID, noID, false); err != nil {
		t.Errorf("node with its own providerID: %v, want accepted", err)
	}
	if err := checkMetadata(bare, &cloudprovider.InstanceMetadata{ProviderID: "bad"}, true); !errors.Is(err, errMalformedID) {
		t.Errorf("malformed providerID from a legacy provider: %v, want errMalformedID", err)
	}
}
