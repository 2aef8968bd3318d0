package cloud

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	cloudprovider "k8s.io/cloud-provider"
)

// CloudFaulter is what a provider's error implements to say itself whether
// it is the cloud failing (true: an outage, a timeout, the cloud's own
// server error) or the request's own refusal (false). IsCloudFault asks it
// before any other test, so a provider whose errors carry no HTTP status
// can still be classified exactly.
type CloudFaulter interface {
	CloudFault() bool
}

// IsCloudFault reports whether err is the cloud failing for everyone
// rather than one object's own error. The controllers back off from an
// object's own error (an invalid argument, a quota, a providerID the
// provider cannot parse) for as long as their backoff says; only the cloud
// failing counts towards an outage, and only what failed because of one is
// retried at once when the cloud answers again (RecoveryNotifier).
//
// In order: a CloudFaulter in err's chain answers for it; the context
// being canceled, cloudprovider.InstanceNotFound, NotImplemented and
// ImplementedElsewhere are not faults; a RetryError (the cloud throttling
// or busy), the call's deadline passing, a network error (a timeout, a
// refused or reset connection, a transport error of an HTTP client: every
// *url.Error is a net.Error) and an answer with HTTP status 408, 429 or
// 5xx are. An error carrying another status is the request's own. Anything
// else, a plain error a provider made itself, is taken as the object's own:
// mistaking an outage for that only forgoes the early retry at recovery,
// while the reverse would retry a refused object at every recovery.
//
// The status is read through the methods SDKs give their errors:
// HTTPStatusCode() int (smithy-go, the AWS SDK v2's) or StatusCode() int
// (the AWS SDK v1's RequestFailure, localcloud's client).
func IsCloudFault(err error) bool {
	if err == nil {
		return false
	}
	var f CloudFaulter
	if errors.As(err, &f) {
		return f.CloudFault()
	}
	switch {
	case errors.Is(err, context.Canceled),
		errors.Is(err, cloudprovider.InstanceNotFound),
		errors.Is(err, cloudprovider.NotImplemented),
		errors.Is(err, cloudprovider.ImplementedElsewhere):
		return false
	}
	if _, ok := RetryAfter(err); ok {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if code, ok := httpStatus(err); ok {
		return code == 408 || code == 429 || code >= 500
	}
	return false
}

// httpStatus finds the HTTP status an SDK's error carries, if any.
func httpStatus(err error) (int, bool) {
	var smithy interface{ HTTPStatusCode() int }
	if errors.As(err, &smithy) {
		return smithy.HTTPStatusCode(), true
	}
	var v1 interface{ StatusCode() int }
	if errors.As(err, &v1) {
		return v1.StatusCode(), true
	}
	return 0, false
}
