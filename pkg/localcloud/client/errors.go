package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// Sentinel errors an *APIError matches with errors.Is, by its code.
var (
	ErrNotFound        = errors.New("not found")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrQuotaExceeded   = errors.New("quota exceeded")
	ErrRateLimited     = errors.New("rate limited")
	ErrConflict        = errors.New("conflict")
	ErrUnauthorized    = errors.New("unauthorized")
	ErrInternal        = errors.New("internal error")
)

// APIError is an error answer of the API.
type APIError struct {
	StatusCode int
	Code       api.ErrorCode
	Field      string
	Message    string
	// RetryAfter is the server's advice on a 429 answer.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d): %s", e.Code, e.StatusCode, e.Message)
}

// HTTPStatusCode is the answer's HTTP status, read by cloud.IsCloudFault
// (through the method name SDKs give it) to tell the cloud failing (5xx,
// 429) from a request it refused (4xx).
func (e *APIError) HTTPStatusCode() int { return e.StatusCode }

// Is lets errors.Is(err, ErrNotFound) and friends match by code.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Code == api.CodeNotFound
	case ErrInvalidArgument:
		return e.Code == api.CodeInvalidArgument
	case ErrQuotaExceeded:
		return e.Code == api.CodeQuotaExceeded
	case ErrRateLimited:
		return e.Code == api.CodeRateLimited
	case ErrConflict:
		return e.Code == api.CodeConflict
	case ErrUnauthorized:
		return e.Code == api.CodeUnauthorized
	case ErrInternal:
		return e.Code == api.CodeInternal
	}
	return false
}

// RetryAfter returns the server's retry advice carried by err, if any.
func RetryAfter(err error) (time.Duration, bool) {
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == api.CodeRateLimited {
		return ae.RetryAfter, true
	}
	return 0, false
}
