// Package api holds the localcloud wire format: resource types, request
// and response bodies, error codes, and the validation rules the server
// applies before it writes anything. The server and the client share it so
// that both sides agree on field names and limits.
package api
