// Package client is the Go client of the localcloud API, used by the
// provider, the CLI, the sandbox and tests.
//
// Every call takes a context. Answers 429 are retried a bounded number of
// times after the server's Retry-After; other errors come back at once as
// *APIError, wrapped with the operation, and match the sentinel errors
// (ErrNotFound, ErrQuotaExceeded, ErrRateLimited, ...) with errors.Is.
package client
