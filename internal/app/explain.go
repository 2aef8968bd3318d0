package app

import (
	"net/http"

	"github.com/stratus-ccm/stratus/internal/explain"
)

// explainHandler serves the controllers' record at explain.Path. Only the
// leader's controllers act; a standby answers with the holder of the Lease
// as it last saw it. Without leader election every replica leads.
func explainHandler(store *explain.Store, lock *observedLock) http.Handler {
	return explain.Handler(store, func() (string, bool, string) {
		if lock == nil {
			return "", true, ""
		}
		return lock.leadership()
	})
}

// leadership is this replica's identity, whether it holds the Lease, and
// who does as last seen.
func (l *observedLock) leadership() (replica string, leading bool, leader string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	replica = l.Identity()
	if l.holding {
		return replica, true, replica
	}
	return replica, false, l.seenHolder
}
