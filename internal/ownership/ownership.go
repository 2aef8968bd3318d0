// Package ownership decides which Nodes this controller manager acts on in
// a hybrid cluster, where nodes of another cloud or on-premises machines
// sit beside the provider's own. It follows the draft of KEP-5778: a
// provider names the platforms it supports (the providerID prefixes,
// "aws" of "aws:///eu-west-1a/i-0abc"), --cloud-provider-platforms
// overrides that list, and a Node without a providerID may name its
// platform in the annotation cloudprovider.kubernetes.io/platform.
//
// Without either list every Node is the provider's, as upstream's
// controllers assume: the policy is opt-in, by flag or by a provider that
// implements PlatformLister.
package ownership

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// AnnotationPlatform names the platform of a Node that has no providerID
// yet (KEP-5778's draft name).
const AnnotationPlatform = "cloudprovider.kubernetes.io/platform"

// PlatformLister is the optional provider extension of KEP-5778's draft:
// the platform identifiers (providerID prefixes) the provider serves.
type PlatformLister interface {
	GetSupportedPlatform() []string
}

// Verdict is what the policy says of one Node.
type Verdict int

// Verdicts.
const (
	// Owned: the Node is the provider's; controllers act on it.
	Owned Verdict = iota
	// Foreign: the Node belongs to another platform; no controller may
	// initialize, taint, delete or route it.
	Foreign
	// Unknown: the Node names no platform (no providerID, no annotation);
	// controllers do what upstream does, asking the cloud, and must not
	// delete it on the cloud's "not found" alone.
	Unknown
)

func (v Verdict) String() string {
	switch v {
	case Owned:
		return "owned"
	case Foreign:
		return "foreign"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Policy is the set of platforms this controller manager owns. The zero
// value owns every Node.
type Policy struct {
	platforms []string
}

// New returns the policy for flag (--cloud-provider-platforms, as given)
// and the provider: the flag's list when set, else the provider's own
// when it implements PlatformLister, else none (every Node is owned).
func New(flag []string, p cloudprovider.Interface) (Policy, error) {
	list := flag
	if len(list) == 0 {
		if pl, ok := p.(PlatformLister); ok {
			list = pl.GetSupportedPlatform()
		}
	}
	var out []string
	for _, name := range list {
		name = strings.TrimSpace(name)
		if err := validPlatform(name); err != nil {
			return Policy{}, err
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return Policy{platforms: out}, nil
}

// validPlatform accepts what can prefix a providerID: a URI scheme.
func validPlatform(name string) error {
	if name == "" {
		return fmt.Errorf("--cloud-provider-platforms: an empty platform name")
	}
	for i, r := range name {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		other := r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'
		if !letter && (i == 0 || !other) {
			return fmt.Errorf("--cloud-provider-platforms: %q is not a providerID prefix (a URI scheme: a letter, then letters, digits, '+', '-' or '.')", name)
		}
	}
	return nil
}

// Enabled reports whether the policy restricts anything.
func (p Policy) Enabled() bool { return len(p.platforms) > 0 }

// Platforms returns the owned platforms, in the order given.
func (p Policy) Platforms() []string { return slices.Clone(p.platforms) }

// Of returns what the policy says of node.
func (p Policy) Of(node *corev1.Node) Verdict {
	if !p.Enabled() {
		return Owned
	}
	platform := ""
	if id := node.Spec.ProviderID; id != "" {
		platform = Platform(id)
		if platform == "" {
			// A providerID that names no platform is not provably ours.
			return Foreign
		}
	} else if a := strings.TrimSpace(node.Annotations[AnnotationPlatform]); a != "" {
		platform = a
	} else {
		return Unknown
	}
	for _, owned := range p.platforms {
		if strings.EqualFold(owned, platform) {
			return Owned
		}
	}
	return Foreign
}

// Platform returns the platform a providerID names, its scheme ("aws" of
// "aws:///zone/i-1"), or "" when it has none.
func Platform(providerID string) string {
	scheme, _, ok := strings.Cut(providerID, "://")
	if !ok || validPlatform(scheme) != nil {
		return ""
	}
	return scheme
}
