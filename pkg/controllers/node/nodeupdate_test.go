package node

import (
	"errors"
	"testing"
)

func TestValidateProviderID(t *testing.T) {
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
	for k, want := range map[string]bool{
		"kubernetes.io/x": true, "node.kubernetes.io/x": true, "k8s.io/x": true, "a.k8s.io/x": true,
		"example.com/x": false, "notkubernetes.io/x": false, "plain": false,
	} {
		if got := isKubernetesLabel(k); got != want {
			t.Errorf("isKubernetesLabel(%q) = %v, want %v", k, got, want)
		}
	}
}
