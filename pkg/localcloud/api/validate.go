package api

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// Limits on caller-chosen values. They are generous but finite so that a
// typo cannot make the server store megabytes.
const (
	MaxNameLength = 253
	MaxTags       = 50
	MaxTagLength  = 255
	MaxListeners  = 50
	MaxBackends   = 5000
	// MaxEndpoints bounds the endpoints of a load balancer, all listeners
	// together.
	MaxEndpoints   = 5000
	MaxBatchCreate = 1000
	MaxPageSize    = 1000
	DefaultPage    = 100
)

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	// A cloud label such as a zone or instance type: no spaces, no slashes.
	labelRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$`)
	idRE    = regexp.MustCompile(`^(i|lb)-[0-9a-f]{16}$`)
)

// ValidName checks a DNS-1123-like resource name.
func ValidName(field, v string) error {
	if v == "" {
		return Invalid(field, "must not be empty")
	}
	if len(v) > MaxNameLength || !nameRE.MatchString(v) {
		return Invalid(field, fmt.Sprintf("%q must be lower-case letters, digits, '-' or '.', "+
			"start and end with a letter or digit, at most %d characters", v, MaxNameLength))
	}
	return nil
}

// ValidID checks the syntax of an instance ("i-…") or load balancer ("lb-…") id.
func ValidID(field, prefix, v string) error {
	if !idRE.MatchString(v) || !strings.HasPrefix(v, prefix+"-") {
		return Invalid(field, fmt.Sprintf("%q is not a valid id (want %s- and 16 hex digits)", v, prefix))
	}
	return nil
}

func validLabel(field, v string, required bool) error {
	if v == "" {
		if required {
			return Invalid(field, "must not be empty")
		}
		return nil
	}
	if len(v) > 63 || !labelRE.MatchString(v) {
		return Invalid(field, fmt.Sprintf("%q must be letters, digits, '-', '.' or '_', at most 63 characters", v))
	}
	return nil
}

func validTags(field string, tags map[string]string) error {
	if len(tags) > MaxTags {
		return Invalid(field, fmt.Sprintf("at most %d tags, got %d", MaxTags, len(tags)))
	}
	for k, v := range tags {
		if k == "" || len(k) > MaxTagLength || strings.ContainsAny(k, "=,") {
			return Invalid(field, fmt.Sprintf("tag key %q must be 1-%d characters without '=' or ','", k, MaxTagLength))
		}
		if len(v) > MaxTagLength {
			return Invalid(field+"."+k, fmt.Sprintf("tag value longer than %d characters", MaxTagLength))
		}
	}
	return nil
}

// Validate checks a create-instance request.
func (r *CreateInstanceRequest) Validate(field string) error {
	if err := ValidName(field+"name", r.Name); err != nil {
		return err
	}
	if err := validLabel(field+"zone", r.Zone, true); err != nil {
		return err
	}
	if err := validLabel(field+"region", r.Region, true); err != nil {
		return err
	}
	if err := validLabel(field+"type", r.Type, true); err != nil {
		return err
	}
	if r.InternalAddress != "" {
		a, err := netip.ParseAddr(r.InternalAddress)
		if err != nil || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
			return Invalid(field+"internalAddress", fmt.Sprintf("%q is not a unicast IP address", r.InternalAddress))
		}
	}
	if r.InternalAddress6 != "" {
		a, err := netip.ParseAddr(r.InternalAddress6)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() || a.IsLinkLocalUnicast() {
			return Invalid(field+"internalAddress6", fmt.Sprintf("%q is not a global or unique-local IPv6 unicast address", r.InternalAddress6))
		}
		if r.InternalAddress != "" && !netip.MustParseAddr(r.InternalAddress).Is4() {
			return Invalid(field+"internalAddress", fmt.Sprintf("%q: with internalAddress6 set, the internal address is the IPv4 one", r.InternalAddress))
		}
	}
	return validTags(field+"tags", r.Tags)
}

// Validate checks a batch create request, naming the offending item.
func (r *BatchCreateInstancesRequest) Validate() error {
	if len(r.Instances) == 0 {
		return Invalid("instances", "must not be empty")
	}
	if len(r.Instances) > MaxBatchCreate {
		return Invalid("instances", fmt.Sprintf("at most %d per batch, got %d", MaxBatchCreate, len(r.Instances)))
	}
	seen := make(map[string]int, len(r.Instances))
	for i := range r.Instances {
		f := fmt.Sprintf("instances[%d].", i)
		if err := r.Instances[i].Validate(f); err != nil {
			return err
		}
		if j, dup := seen[r.Instances[i].Name]; dup {
			return Conflict(f+"name", fmt.Sprintf("name %q repeats instances[%d]", r.Instances[i].Name, j))
		}
		seen[r.Instances[i].Name] = i
	}
	return nil
}

// ValidPort checks a TCP/UDP port number.
func ValidPort(field string, p int) error {
	if p < 1 || p > 65535 {
		return Invalid(field, fmt.Sprintf("%d is not a port (1-65535)", p))
	}
	return nil
}

// ParseCIDR parses a CIDR in canonical form (no host bits set), so that two
// spellings of one network cannot both land in a table.
func ParseCIDR(field, v string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return netip.Prefix{}, Invalid(field, fmt.Sprintf("%q is not a CIDR: %v", v, err))
	}
	if p.Masked() != p {
		return netip.Prefix{}, Invalid(field, fmt.Sprintf("%q has host bits set (network is %s)", v, p.Masked()))
	}
	return p, nil
}

// Validate checks a load balancer spec. Backend existence is the server's
// business; here only syntax is checked.
func (s *LoadBalancerSpec) Validate() error {
	if len(s.Listeners) == 0 {
		return Invalid("listeners", "at least one listener is required")
	}
	if len(s.Listeners) > MaxListeners {
		return Invalid("listeners", fmt.Sprintf("at most %d listeners", MaxListeners))
	}
	if err := s.validListeners(); err != nil {
		return err
	}
	if s.EndpointTargets() && len(s.Backends) > 0 {
		return Invalid("backends", fmt.Sprintf("%d backends on a load balancer whose targets are endpoints: its targets are its listeners' endpoints", len(s.Backends)))
	}
	if len(s.Backends) > MaxBackends {
		return Invalid("backends", fmt.Sprintf("at most %d backends", MaxBackends))
	}
	for i, b := range s.Backends {
		if err := ValidID(fmt.Sprintf("backends[%d]", i), "i", b); err != nil {
			return err
		}
	}
	for i, f := range s.IPFamilies {
		if f != IPv4 && f != IPv6 {
			return Invalid(fmt.Sprintf("ipFamilies[%d]", i), fmt.Sprintf("%q: want IPv4 or IPv6", f))
		}
		if slices.Index(s.IPFamilies, f) != i {
			return Invalid("ipFamilies", fmt.Sprintf("%v lists %s twice", s.IPFamilies, f))
		}
	}
	if err := validSourceRanges(s.SourceRanges, s.Families()); err != nil {
		return err
	}
	if s.UDPIdleTimeoutMs < 0 {
		return Invalid("udpIdleTimeoutMs", fmt.Sprintf("%d must not be negative", s.UDPIdleTimeoutMs))
	}
	switch s.SessionAffinity {
	case "", SessionAffinityNone, SessionAffinityClientIP:
	default:
		return Invalid("sessionAffinity", fmt.Sprintf("%q: want None or ClientIP", s.SessionAffinity))
	}
	switch s.ProxyProtocol {
	case "", ProxyProtocolV1, ProxyProtocolV2:
	default:
		return Invalid("proxyProtocol", fmt.Sprintf("%q: want v1 or v2 (or none)", s.ProxyProtocol))
	}
	if s.EndpointTargets() && s.HealthCheck.Port != 0 {
		return Invalid("healthCheck.port", fmt.Sprintf("%d: a load balancer whose targets are endpoints probes each endpoint on its own port", s.HealthCheck.Port))
	}
	return s.HealthCheck.validate()
}

// validListeners checks each listener, its node port (none needed with
// endpoint targets) and its endpoints.
func (s *LoadBalancerSpec) validListeners() error {
	type key struct {
		p    Protocol
		port int
	}
	switch s.Targets {
	case "", TargetsInstances, TargetsEndpoints:
	default:
		return Invalid("targets", fmt.Sprintf("%q: want instances or endpoints", s.Targets))
	}
	seen := map[key]bool{}
	endpoints := 0
	for i, l := range s.Listeners {
		f := fmt.Sprintf("listeners[%d]", i)
		if l.Protocol != ProtocolTCP && l.Protocol != ProtocolUDP {
			return Invalid(f+".protocol", fmt.Sprintf("%q is not supported (TCP or UDP)", l.Protocol))
		}
		if err := ValidPort(f+".port", l.Port); err != nil {
			return err
		}
		// Endpoint targets have their own ports: a node port is optional.
		if l.NodePort == 0 && !s.EndpointTargets() {
			return Invalid(f+".nodePort", "0 is not a port (1-65535); only a load balancer whose targets are endpoints (targets: endpoints) may have none")
		}
		if l.NodePort != 0 {
			if err := ValidPort(f+".nodePort", l.NodePort); err != nil {
				return err
			}
		}
		if seen[key{l.Protocol, l.Port}] {
			return Invalid(f+".port", fmt.Sprintf("%s port %d is listed twice", l.Protocol, l.Port))
		}
		seen[key{l.Protocol, l.Port}] = true
		if len(l.Endpoints) > 0 && !s.EndpointTargets() {
			return Invalid(f+".endpoints", fmt.Sprintf("%d endpoints on a load balancer whose targets are instances: set targets: endpoints (and no backends)", len(l.Endpoints)))
		}
		endpoints += len(l.Endpoints)
		if endpoints > MaxEndpoints {
			return Invalid(f+".endpoints", fmt.Sprintf("at most %d endpoints, all listeners together", MaxEndpoints))
		}
		if err := s.validEndpoints(f+".endpoints", l.Endpoints); err != nil {
			return err
		}
	}
	return nil
}

// validEndpoints checks a listener's endpoints: unicast addresses of one
// of the load balancer's families (the other family's would never get a
// connection), valid ports, each address:port once.
func (s *LoadBalancerSpec) validEndpoints(field string, eps []Endpoint) error {
	seen := make(map[netip.AddrPort]int, len(eps))
	for i, e := range eps {
		f := fmt.Sprintf("%s[%d]", field, i)
		a, err := netip.ParseAddr(e.Address)
		if err != nil || a.Zone() != "" || a.Is4In6() || a.IsUnspecified() || a.IsMulticast() {
			return Invalid(f+".address", fmt.Sprintf("%q is not a unicast IP address (without zone, not IPv4-mapped)", e.Address))
		}
		fam := IPv4
		if a.Is6() {
			fam = IPv6
		}
		if !s.Has(fam) {
			return Invalid(f+".address", fmt.Sprintf("%s is an %s address, and ipFamilies %v has no %s", e.Address, fam, s.Families(), fam))
		}
		if err := ValidPort(f+".port", e.Port); err != nil {
			return err
		}
		ap := netip.AddrPortFrom(a, uint16(e.Port))
		if j, dup := seen[ap]; dup {
			return Invalid(f, fmt.Sprintf("%s repeats %s[%d]", ap, field, j))
		}
		seen[ap] = i
	}
	return nil
}

// validSourceRanges checks each range's syntax, and that a non-empty list
// admits someone. A client reaches a VIP from an address of the VIP's
// family, so a list with no range of any family the load balancer has a
// VIP of ("::/0" meant as "everyone" on an IPv4 load balancer) would drop
// every client while the load balancer reports active. A list with a
// range of one of its families is accepted whole: its other ranges simply
// match no client, as a dual-stack Service's list reads on a single-stack
// load balancer.
func validSourceRanges(ranges []string, families []IPFamily) error {
	admits := false
	for i, r := range ranges {
		p, err := ParseCIDR(fmt.Sprintf("sourceRanges[%d]", i), r)
		if err != nil {
			return err
		}
		// An IPv4-mapped IPv6 range matches no IPv4 client either.
		f := IPv6
		if p.Addr().Is4() {
			f = IPv4
		}
		admits = admits || slices.Contains(families, f)
	}
	if len(ranges) > 0 && !admits {
		return Invalid("sourceRanges", fmt.Sprintf("%q has no range of the load balancer's families %v: it would admit no client (leave it empty to admit every source, or add 0.0.0.0/0 or ::/0)", ranges, families))
	}
	return nil
}

func (h HealthCheck) validate() error {
	if h.Port != 0 {
		if err := ValidPort("healthCheck.port", h.Port); err != nil {
			return err
		}
	}
	if h.Path != "" {
		if err := validHealthPath(h.Path); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{
		{"healthCheck.intervalMs", h.IntervalMs, 3600_000},
		{"healthCheck.timeoutMs", h.TimeoutMs, 3600_000},
		{"healthCheck.healthyThreshold", h.HealthyThreshold, 100},
		{"healthCheck.unhealthyThreshold", h.UnhealthyThreshold, 100},
	} {
		if f.v < 0 || f.v > f.max {
			return Invalid(f.name, fmt.Sprintf("%d is out of range (0-%d, 0 means default)", f.v, f.max))
		}
	}
	return nil
}

// validHealthPath accepts an absolute URL path of printable ASCII without
// spaces, at most 256 bytes.
func validHealthPath(p string) error {
	if len(p) > 256 || !strings.HasPrefix(p, "/") {
		return Invalid("healthCheck.path", fmt.Sprintf("%q must start with / and be at most 256 bytes", p))
	}
	for _, r := range p {
		if r <= ' ' || r > '~' {
			return Invalid("healthCheck.path", fmt.Sprintf("%q has a space or a character outside printable ASCII", p))
		}
	}
	return nil
}

// Validate checks a create-load-balancer request.
func (r *CreateLoadBalancerRequest) Validate() error {
	if err := ValidName("name", r.Name); err != nil {
		return err
	}
	if err := ValidName("cluster", r.Cluster); err != nil {
		return err
	}
	if err := validTags("tags", r.Tags); err != nil {
		return err
	}
	if r.VIP != "" {
		if a, err := netip.ParseAddr(r.VIP); err != nil || !a.Is4() {
			return Invalid("vip", fmt.Sprintf("%q is not an IPv4 address", r.VIP))
		}
		if !r.Has(IPv4) {
			return Invalid("vip", fmt.Sprintf("%s is an IPv4 address, and ipFamilies %v has no IPv4", r.VIP, r.IPFamilies))
		}
	}
	if r.VIP6 != "" {
		if a, err := netip.ParseAddr(r.VIP6); err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return Invalid("vip6", fmt.Sprintf("%q is not an IPv6 address (without zone, not IPv4-mapped)", r.VIP6))
		}
		if !r.Has(IPv6) {
			return Invalid("vip6", fmt.Sprintf("%s is an IPv6 address, and ipFamilies %v has no IPv6", r.VIP6, r.Families()))
		}
	}
	return r.LoadBalancerSpec.Validate()
}

// Validate checks a create-route request.
func (r *CreateRouteRequest) Validate() error {
	if err := ValidName("name", r.Name); err != nil {
		return err
	}
	if _, err := ParseCIDR("destinationCIDR", r.DestinationCIDR); err != nil {
		return err
	}
	return ValidID("instanceId", "i", r.InstanceID)
}
