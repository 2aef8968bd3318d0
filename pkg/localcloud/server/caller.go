package server

import (
	"net/http"
	"strings"
	"unicode"
)

// maxCallerLength bounds the caller recorded on an object: a User-Agent
// is the client's to choose, and every record of the object carries it.
const maxCallerLength = 256

// caller is who makes a call, as recorded on what it creates or changes
// (a load balancer's UpdatedBy, a route's CreatedBy): its User-Agent. All
// callers share the token, so the User-Agent is the only name the cloud
// has for them; it lets `stratus teardown` say which process last managed
// a cluster's objects. Control characters are dropped, since the value is
// printed back to people.
func caller(r *http.Request) string {
	ua := strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return -1
		}
		return c
	}, r.UserAgent())
	if len(ua) > maxCallerLength {
		ua = strings.ToValidUTF8(ua[:maxCallerLength], "")
	}
	return strings.TrimSpace(ua)
}
