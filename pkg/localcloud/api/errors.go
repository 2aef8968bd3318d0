package api

import (
	"net/http"
	"strconv"
	"strings"
)

// ErrorCode classifies an API error; clients branch on it, never on text.
type ErrorCode string

// Error codes and the HTTP status each travels with.
const (
	CodeNotFound        ErrorCode = "NotFound"        // 404
	CodeInvalidArgument ErrorCode = "InvalidArgument" // 400
	CodeQuotaExceeded   ErrorCode = "QuotaExceeded"   // 403
	CodeRateLimited     ErrorCode = "RateLimited"     // 429
	CodeConflict        ErrorCode = "Conflict"        // 409
	CodeUnauthorized    ErrorCode = "Unauthorized"    // 401
	CodeInternal        ErrorCode = "Internal"        // 500, 503 when injected
)

// HTTPStatus is the status an error code is answered with.
func (c ErrorCode) HTTPStatus() int {
	switch c {
	case CodeNotFound:
		return http.StatusNotFound
	case CodeInvalidArgument:
		return http.StatusBadRequest
	case CodeQuotaExceeded:
		return http.StatusForbidden
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeConflict:
		return http.StatusConflict
	case CodeUnauthorized:
		return http.StatusUnauthorized
	default:
		return http.StatusInternalServerError
	}
}

// ErrorBody is the inner object of an error answer.
type ErrorBody struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	Field   string    `json:"field,omitempty"`
}

// ErrorResponse is the JSON body of every non-2xx answer.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// Error is an API error inside the server: it carries the code and field
// to answer with. It implements error so validation can return it.
type Error struct {
	Code    ErrorCode
	Field   string
	Message string
}

func (e *Error) Error() string {
	// Invalid's message already starts with the field.
	if e.Field != "" && !strings.HasPrefix(e.Message, e.Field+": ") {
		return string(e.Code) + ": " + e.Field + ": " + e.Message
	}
	return string(e.Code) + ": " + e.Message
}

// Invalid builds an InvalidArgument error naming the field.
func Invalid(field, msg string) *Error {
	return &Error{Code: CodeInvalidArgument, Field: field, Message: field + ": " + msg}
}

// NotFound builds a NotFound error naming what was looked for.
func NotFound(field, msg string) *Error {
	return &Error{Code: CodeNotFound, Field: field, Message: msg}
}

// Conflict builds a Conflict error.
func Conflict(field, msg string) *Error {
	return &Error{Code: CodeConflict, Field: field, Message: msg}
}

// QuotaExceeded builds a QuotaExceeded error naming the quota.
func QuotaExceeded(quota string, limit int) *Error {
	return &Error{Code: CodeQuotaExceeded, Field: quota,
		Message: "quota " + quota + " exceeded (limit " + strconv.Itoa(limit) + ")"}
}
