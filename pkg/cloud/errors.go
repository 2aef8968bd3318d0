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
