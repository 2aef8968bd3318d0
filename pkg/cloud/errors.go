package cloud

import "errors"

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

// ErrPortNotSupported is what a provider's error wraps when it refuses a
// Service's port or protocol (SCTP, a mix of protocols, a port range it
// cannot serve). The service controller reports it in the Service's
// LoadBalancerPortsError condition (KEP-1435); the failure is retried as
// any other, so that a fixed Service is served without a restart.
//
//	fmt.Errorf("port %d/%s: %w", port, proto, cloud.ErrPortNotSupported)
var ErrPortNotSupported = errors.New("port or protocol not supported by the cloud's load balancer")
