package app

import (
	"net/http"

	"github.com/stratus-ccm/stratus/internal/app/leader"
	"github.com/stratus-ccm/stratus/internal/explain"
)

// explainHandler serves the controllers' record at explain.Path. Only the
// leader's controllers act; a standby answers with the holder of the Lease
// as it last saw it. Without leader election every replica leads.
func explainHandler(store *explain.Store, lock *leader.Lock) http.Handler {
	return explain.Handler(store, func() (string, bool, string) {
		if lock == nil {
			return "", true, ""
		}
		return lock.Leadership()
	})
}
