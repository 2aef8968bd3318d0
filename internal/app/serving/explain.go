package serving

import (
	"net/http"

	"github.com/stratus-ccm/stratus/internal/app/leader"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/observe"
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

// ObservePath serves observe mode's summary of planned changes.
const ObservePath = "/debug/observe"

// debugHandlers are the debug pages to serve: the controllers' explain
// record, and observe mode's plan when on.
func debugHandlers(rec *observe.Recorder, explained http.Handler) map[string]http.Handler {
	h := map[string]http.Handler{explain.Path: explained}
	if rec != nil {
		h[ObservePath] = rec
	}
	return h
}
