// Package kit is the skeleton the controllers share, so that they differ
// only in their own logic: how a RetryError from the provider becomes a
// requeue, the event recorder policy, the work queue captured for code
// outside the handlers, the result labels of their metrics, how a
// controller names itself in logs and observe mode, and how it hears that
// the cloud answers again after an outage.
package kit

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/observe"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// MinRetryAfter is the shortest requeue a RetryError causes: a provider
// that asks to retry without a delay must not make a controller spin.
const MinRetryAfter = 100 * time.Millisecond

// Result labels the controllers' sync metrics share.
const (
	// ResultSuccess is a sync that did its work.
	ResultSuccess = "success"
	// ResultRetry is a sync the cloud asked to retry later (a RetryError).
	ResultRetry = "retry"
	// ResultError is a sync that failed and retries with backoff.
	ResultError = "error"
)

// RetryLater maps a provider's RetryError (cloud.RetryAfter) to a requeue
// after the delay it names, at least MinRetryAfter. ok is false for any
// other error and for nil. A RetryError is the cloud's normal answer for
// work in progress (a load balancer still provisioning), so it is logged
// at V(2), emits no warning event and does not count as a failure: the
// queue's per-object backoff is not touched.
func RetryLater(ctx context.Context, err error) (res reconcile.Result, ok bool) {
	d, ok := cloud.RetryAfter(err)
	if !ok {
		return reconcile.Result{}, false
	}
	d = max(d, MinRetryAfter)
	klog.FromContext(ctx).V(2).Info("Cloud asked to retry later", "after", d, "reason", err.Error())
	return reconcile.Result{RequeueAfter: d}, true
}

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
// wants no events passes none, and no controller checks for nil.
func Recorder(r events.EventRecorder) events.EventRecorder {
	if r == nil {
		return discard{}
	}
	return r
}

type discard struct{}

func (discard) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

// WithController names the controller in ctx, for observe mode's record of
// who would have written what (the API transport and the cloud wrapper
// read it). controller-runtime already puts the name in the logger of a
// reconcile; a runnable of the controller's own calls this too.
func WithController(ctx context.Context, name string) context.Context {
	return observe.WithController(ctx, name)
}

// OnRecovered calls fn each time the cloud answers again after an outage,
// when n is set. fn runs on the goroutine of the call that succeeded and
// must not block: it only adds to a queue.
func OnRecovered(n cloud.RecoveryNotifier, fn func()) {
	if n != nil {
		n.OnRecovered(fn)
	}
}
