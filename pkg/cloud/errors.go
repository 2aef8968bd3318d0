package cloud

import (
	"errors"
	"time"

	cloudproviderapi "k8s.io/cloud-provider/api"
)

// ErrQuotaExceeded is what a provider's error wraps when the cloud refused
// a creation because a quota is used up (a full route table, too many load
// balancers). Controllers recognise it with errors.Is to report quota
// exhaustion the same way for every provider; they retry such a failure as
// any other.
//
// A provider wraps it beside its own cause, for instance
//
//	fmt.Errorf("create route %s: %w: %w", cidr, cloud.ErrQuotaExceeded, err)
var ErrQuotaExceeded = errors.New("cloud quota exceeded")

// ErrThrottled is what a provider's error wraps when the cloud refused a
// call because the caller exceeds its API rate limit (HTTP 429 and the
// like). The instrumented wrapper then slows every call of the operation's
// class down; it does not for a bare RetryError, which is per object (a
// load balancer still provisioning). A provider wraps it beside its own
// cause, for instance
//
//	fmt.Errorf("%w: %w", cloud.ErrThrottled, err)
var ErrThrottled = errors.New("cloud API rate limit exceeded")

// ErrAmbiguousName is returned for a Node without providerID whose name
// more than one listed instance carries: guessing would attribute another
// machine's metadata, or its absence, to the Node.
var ErrAmbiguousName = errors.New("more than one instance carries the node's name")

// ErrUnknownProvider is returned when neither the Stratus registry nor
// upstream's global registry knows a provider name.
var ErrUnknownProvider = errors.New("unknown cloud provider")

// RetryAfter reports the delay a provider asked for with a RetryError
// anywhere in err's chain.
func RetryAfter(err error) (time.Duration, bool) {
	var re *cloudproviderapi.RetryError
	if errors.As(err, &re) {
		return re.RetryAfter(), true
	}
	return 0, false
}

// ErrPortNotSupported is what a provider's error wraps when it refuses a
// Service's port or protocol (SCTP, a mix of protocols, a port range it
// cannot serve). The service controller reports it in the Service's
// LoadBalancerPortsError condition (KEP-1435); the failure is retried as
// any other, so that a fixed Service is served without a restart.
//
//	fmt.Errorf("port %d/%s: %w", port, proto, cloud.ErrPortNotSupported)
var ErrPortNotSupported = errors.New("port or protocol not supported by the cloud's load balancer")

// ErrIPFamilyNotSupported is what an error wraps when a Service asks for
// an IP family the cloud's load balancers cannot serve (an IPv6 or a
// RequireDualStack Service on an IPv4-only cloud). The service controller
// returns it before calling the provider when the provider declares its
// families (IPFamilyLister), and recognises it from a provider that
// decides per Service; either way the Service's LoadBalancerServing
// condition says IPFamilyNotSupported and no load balancer is made for a
// family set the cloud cannot serve whole. It is retried as any other
// failure, so that a Service changed to a served family is served.
//
//	fmt.Errorf("ipFamilies %v: %w", svc.Spec.IPFamilies, cloud.ErrIPFamilyNotSupported)
var ErrIPFamilyNotSupported = errors.New("IP family not supported by the cloud's load balancers")
