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
