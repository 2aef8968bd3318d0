package node

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	netutils "k8s.io/utils/net"
)

// Reasons a Node cannot be initialized from the metadata the cloud gave.
var (
	errNilMetadata        = errors.New("the cloud provider returned no instance metadata")
	errNoProviderID       = errors.New("the cloud provider returned an empty providerID")
	errMalformedID        = errors.New("malformed providerID")
	errNoAddresses        = errors.New("the cloud provider returned no node addresses")
	errProvidedNodeIP     = errors.New("provided node IP")
	errProvidedIPNotFound = errors.New("not among the cloud's addresses for the instance")
)

func hasTaint(taints []corev1.Taint, key string) bool {
	return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == key })
}

func withoutTaint(taints []corev1.Taint, key string) []corev1.Taint {
	return slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == key })
}

// isUninitialized reports whether the Node waits for this controller.
func isUninitialized(n *corev1.Node) bool {
	return hasTaint(n.Spec.Taints, cloudproviderapi.TaintExternalCloudProvider)
}

// validateProviderID accepts "<provider>://<id>", the form every provider
// uses (the id may itself start with '/', as AWS's and Azure's do). A value
// the scheduler and the other controllers could not match later is
// refused before it lands in the immutable spec.providerID.
func validateProviderID(id string) error {
	if id == "" {
		return errNoProviderID
	}
	scheme, rest, ok := strings.Cut(id, "://")
	if !ok || scheme == "" || strings.Trim(rest, "/") == "" {
		return fmt.Errorf("%w %q: want <provider>://<instance>", errMalformedID, id)
	}
	for _, r := range scheme {
		if !schemeChar(r) {
			return fmt.Errorf("%w %q: provider name %q has character %q", errMalformedID, id, scheme, r)
		}
	}
	for _, r := range id {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("%w %q: contains whitespace or a control character", errMalformedID, id)
		}
	}
	return nil
}

func schemeChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '+'
}

// desiredAddresses returns the addresses the Node should carry: the cloud's,
// plus the Node's own hostname address when the cloud gives none, ordered
// so that the IPs of the kubelet's provided-node-ip annotation come first.
func desiredAddresses(node *corev1.Node, cloudAddrs []corev1.NodeAddress) ([]corev1.NodeAddress, error) {
	if len(cloudAddrs) == 0 {
		return nil, errNoAddresses
	}
	addrs := slices.Clone(cloudAddrs)
	if !slices.ContainsFunc(addrs, func(a corev1.NodeAddress) bool { return a.Type == corev1.NodeHostName }) {
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeHostName {
				addrs = append(addrs, a)
			}
		}
	}
	provided, ok := node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr]
	if !ok {
		return addrs, nil
	}
	return applyProvidedNodeIP(provided, addrs)
}

// applyProvidedNodeIP implements upstream's semantics for the kubelet's
// --node-ip: each given IP (one, or a dual-stack pair) must be one of the
// cloud's addresses; those addresses come first, and addresses of the same
// type as a given IP but another value are dropped, so that the node IP is
// the one the kubelet was told to use.
func applyProvidedNodeIP(provided string, cloudAddrs []corev1.NodeAddress) ([]corev1.NodeAddress, error) {
	ips, err := parseProvidedNodeIP(provided)
	if err != nil {
		return nil, err
	}
	var out []corev1.NodeAddress
	chosenTypes := map[corev1.NodeAddressType]bool{}
	for _, ip := range ips {
		matched := false
		for _, a := range cloudAddrs {
			if cloudIP := netutils.ParseIPSloppy(a.Address); cloudIP != nil && cloudIP.Equal(ip) {
				out = append(out, a)
				chosenTypes[a.Type] = true
				matched = true
			}
		}
		if !matched {
			return nil, fmt.Errorf("%w %s: %w", errProvidedNodeIP, ip, errProvidedIPNotFound)
		}
	}
	for _, a := range cloudAddrs {
		if !chosenTypes[a.Type] {
			out = append(out, a)
		}
	}
	return out, nil
}

// parseProvidedNodeIP parses the annotation as the kubelet writes it: one IP,
// or a comma-separated pair of one IPv4 and one IPv6, neither unspecified.
func parseProvidedNodeIP(s string) ([]net.IP, error) {
	parts := strings.Split(s, ",")
	ips := make([]net.IP, 0, len(parts))
	for _, p := range parts {
		ip := netutils.ParseIPSloppy(p)
		if ip == nil {
			return nil, fmt.Errorf("%w %q: %q is not an IP address", errProvidedNodeIP, s, p)
		}
		ips = append(ips, ip)
	}
	switch {
	case len(ips) > 2, len(ips) == 2 && netutils.IsIPv6(ips[0]) == netutils.IsIPv6(ips[1]):
		return nil, fmt.Errorf("%w %q: must be a single IP or a dual-stack pair", errProvidedNodeIP, s)
	case len(ips) == 2 && (ips[0].IsUnspecified() || ips[1].IsUnspecified()):
		return nil, fmt.Errorf("%w %q: a dual-stack pair cannot include an unspecified address (0.0.0.0, ::)", errProvidedNodeIP, s)
	}
	return ips, nil
}

// labelChanges returns the labels to set on the Node so that it carries the
// cloud's zone, region and instance type (stable and beta keys, as upstream
// sets both) and the provider's additional labels. Cloud-derived standard
// labels follow the cloud; additional labels are only ever added: keys
// under kubernetes.io or k8s.io are refused (they belong to Kubernetes),
// and a key the Node already has is left alone.
func labelChanges(node *corev1.Node, md *cloudprovider.InstanceMetadata) (set map[string]string, discarded []string) {
	set = map[string]string{}
	want := func(key, value string) {
		if value != "" && node.Labels[key] != value {
			set[key] = value
		}
	}
	want(corev1.LabelInstanceTypeStable, md.InstanceType)
	want(corev1.LabelInstanceType, md.InstanceType)
	want(corev1.LabelTopologyZone, md.Zone)
	want(corev1.LabelFailureDomainBetaZone, md.Zone)
	want(corev1.LabelTopologyRegion, md.Region)
	want(corev1.LabelFailureDomainBetaRegion, md.Region)
	for k, v := range md.AdditionalLabels {
		if _, exists := node.Labels[k]; exists {
			continue
		}
		if isKubernetesLabel(k) || len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			discarded = append(discarded, k)
			continue
		}
		set[k] = v
	}
	slices.Sort(discarded)
	return set, discarded
}

// isKubernetesLabel reports whether key's prefix is kubernetes.io, k8s.io
// or a subdomain of either.
func isKubernetesLabel(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, ns := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == ns || strings.HasSuffix(prefix, "."+ns) {
			return true
		}
	}
	return false
}
