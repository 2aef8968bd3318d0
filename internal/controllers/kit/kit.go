// Package kit is the skeleton the controllers share, so that they differ
// only in their own logic: the collaborators every controller takes
// (deps.go: Deps, resolved once in New, and OrDefault, the one way a
// Config's zero value takes its default), the one Outcome of a sync
// (outcome.go: what the
// queue does next, when the key is retried and why, the result label of
// the metrics, quoting the queue's own backoff), the event recorder
// policy with every note bounded (bound.go), the work queue captured for
// code outside the handlers (queue.go), the clock, how a controller names
// itself in the context of its work, and how it hears that the cloud
// answers again after an outage. The cache the controllers read from is
// set up under them, in objcache, not here.
package kit

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/stratus-ccm/stratus/internal/controllerctx"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Clock returns c, or the real clock when c is nil: every controller
// takes its clock from Deps.Clock, nil meaning the real one, so tests
// drive time the same way in each.
func Clock(c clock.Clock) clock.Clock {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}

// Recorder is the recorder policy: every controller takes an optional
// recorder, and nil means events are dropped, so a test or a binary that
// wants no events passes none, and no controller checks for nil. Every
// note is bounded (BoundMessage), so that an event quoting a long value is
// still accepted by the API server.
func Recorder(r events.EventRecorder) events.EventRecorder {
	if r == nil {
		return discard{}
	}
	return bounded{next: r}
}

type discard struct{}

func (discard) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

// WithController names the controller in ctx, so that observe mode's record
// of who would have written what and explain's record of the cloud calls
// made for an object can tell the controllers apart (they share one API
// client and one cloud). controller-runtime already puts the name in the
// logger of a reconcile; a runnable of the controller's own calls this too.
func WithController(ctx context.Context, name string) context.Context {
	return controllerctx.With(ctx, name)
}

// OnRecovered calls fn each time the cloud answers again after an outage,
// when n is set. fn runs on the goroutine of the call that succeeded and
// must not block: it only adds to a queue.
func OnRecovered(n cloud.RecoveryNotifier, fn func()) {
	if n != nil {
		n.OnRecovered(fn)
	}
}
