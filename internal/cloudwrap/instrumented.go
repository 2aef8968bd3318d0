// Package cloudwrap is how Stratus calls a provider: every call counted
// (stratus_cloud_requests_total, latency), paced adaptively below the
// cloud's rate limit, and watched for the cloud recovering after an outage.
// Cloud implements cloud.Cloud; observe mode is a decorator stacked outside
// it (internal/observe), so nothing here knows of it.
package cloudwrap

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Results recorded in stratus_cloud_requests_total's "result" label.
const (
	ResultSuccess  = "success"
	ResultNotFound = "not_found"
	ResultRetry    = "retry"
	ResultError    = "error"
	// ResultCanceled counts calls that never reached the provider because
	// the context ended while waiting for the client-side rate limiter.
	ResultCanceled = "canceled"
	// ResultRefused counts mutating calls observe mode refused.
	ResultRefused = "refused"
)

// Options configure the instrumented wrapper.
type Options struct {
	// QPS and Burst are a hard ceiling on the calls of each operation
	// class (see OperationClassifier); QPS <= 0 sets none. Below it the
	// wrapper paces calls adaptively, from what the cloud answers.
	QPS   float64
	Burst int
	// Clock paces calls; nil is the real clock.
	Clock clock.Clock
	// Registerer receives the wrapper's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// OnCall, when set, hears of every call the provider answered, with
	// the call's context (which names the object it was made for), its
	// result label and latency: the daemon's record of the cloud calls made
	// per object, for `stratus explain`. It must not block.
	OnCall func(ctx context.Context, op, result string, latency time.Duration, err error)
	// OnPaced, when set, hears of every call (or, for a RequestPacer, every
	// request) the pacer holds back, before it waits: its context, its
	// operation, the wait and why (the cloud's Retry-After, the ceiling,
	// the adaptive limit). It must not block.
	OnPaced func(ctx context.Context, op string, wait time.Duration, why string)
	// CPUPressure reads the machine's CPU pressure, which keeps answers
	// slowed by a busy machine from counting as the cloud's pushback; nil
	// is NewCPUPressure's.
	CPUPressure CPUPressure
}

// Cloud wraps a provider so that every call is counted, timed and
// paced. It implements cloudprovider.Interface itself, and it exposes
// Stratus' extension interfaces only when the wrapped provider implements
// them, so controllers can still detect them.
type Cloud struct {
	provider cloudprovider.Interface
	pacing   *pacing
	metrics  *metrics
	recovery recovery
	// pushback says whether the cloud pushed back lately (Pushback).
	pushback *pushback
	onCall   func(ctx context.Context, op, result string, latency time.Duration, err error)
	// nextCall, when set, is run once, by the next call to start.
	nextCall atomic.Pointer[func(ctx context.Context, op string)]
}

var _ cloud.Cloud = (*Cloud)(nil)

// Instrument wraps p.
func Instrument(p cloudprovider.Interface, o Options) (*Cloud, error) {
	if p == nil {
		return nil, errors.New("instrument cloud provider: provider is nil")
	}
	if o.QPS < 0 {
		return nil, fmt.Errorf("instrument cloud provider: qps %v must not be negative", o.QPS)
	}
	if o.QPS > 0 && o.Burst < 1 {
		return nil, fmt.Errorf("instrument cloud provider: burst %d must be at least 1 when qps is set", o.Burst)
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	pressure := o.CPUPressure
	if pressure == nil {
		pressure = NewCPUPressure()
	}
	c := &Cloud{provider: p, metrics: m, onCall: o.OnCall, pushback: newPushback(pressure)}
	c.pacing = newPacing(p, max(o.QPS, 0), o.Burst, clk, m)
	c.pacing.pushback = c.pushback
	c.pacing.onPaced = o.OnPaced
	if rp, ok := p.(cloud.RequestPacer); ok {
		rp.PaceRequestsWith(c.pacing.gate)
	} else if tr, ok := p.(cloud.ThrottleReporter); ok {
		tr.ReportThrottlesTo(c.pacing.throttledElsewhere)
	}
	return c, nil
}

// Unwrap returns the provider as it was given.
func (c *Cloud) Unwrap() cloudprovider.Interface { return c.provider }

// NotifyNextCall runs fn once, when the next provider call starts (after
// its pacing wait), with that call's context and operation name. The
// daemon uses it to report the first cloud call after winning the lease.
// A later NotifyNextCall replaces an fn that has not run yet.
func (c *Cloud) NotifyNextCall(fn func(ctx context.Context, op string)) {
	c.nextCall.Store(&fn)
}

// call runs one provider operation through the pacing and the metrics.
// Errors keep their chain (%w), so errors.Is(err, cloudprovider.InstanceNotFound)
// and RetryAfter still work on what the controllers receive.
func call[T any](ctx context.Context, c *Cloud, op string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	ctx, pc, started, err := c.pacing.wait(ctx, op)
	if err != nil {
		c.metrics.requests.WithLabelValues(op, ResultCanceled).Inc()
		return zero, fmt.Errorf("cloud %s: waiting for client-side rate limit: %w", op, err)
	}
	if c.nextCall.Load() != nil {
		if fn := c.nextCall.Swap(nil); fn != nil {
			(*fn)(ctx, op)
		}
	}
	v, err := fn(ctx)
	c.pacing.done(pc, started, err)
	latency := c.pacing.clock.Since(started)
	c.pushback.answered(c.pacing.clock.Now(), op, latency)
	c.metrics.duration.WithLabelValues(op).Observe(latency.Seconds())
	result := resultOf(err)
	c.metrics.requests.WithLabelValues(op, result).Inc()
	c.recovery.record(result, err)
	if c.onCall != nil {
		c.onCall(ctx, op, result, latency, err)
	}
	if err != nil {
		return v, fmt.Errorf("cloud %s: %w", op, err)
	}
	return v, nil
}

// call0 is call for operations that return only an error.
func call0(ctx context.Context, c *Cloud, op string, fn func(context.Context) error) error {
	_, err := call(ctx, c, op, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// resultOf names one call's result for the metrics and the recovery
// watch. A RetryError is told as pkg/cloud tells it (cloud.RetryAfter),
// the same test the controllers' sync outcomes make (kit.ResultOf), so a
// call the cloud asked to come back later is neither a failure here nor
// there.
func resultOf(err error) string {
	_, retry := cloud.RetryAfter(err)
	switch {
	case err == nil:
		return ResultSuccess
	case errors.Is(err, cloudprovider.InstanceNotFound):
		return ResultNotFound
	case retry:
		return ResultRetry
	default:
		return ResultError
	}
}

// Initialize passes through: it is a one-time setup call, not an API call.
func (c *Cloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.provider.Initialize(b, stop)
}

// ProviderName passes through.
func (c *Cloud) ProviderName() string { return c.provider.ProviderName() }

// HasClusterID passes through.
func (c *Cloud) HasClusterID() bool { return c.provider.HasClusterID() }

// Clusters passes through unwrapped: no controller calls it.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return c.provider.Clusters() }

// CountRefused counts a mutating call that a decorator outside the wrapper
// (observe mode) refused before it reached here, under the same metric as
// the calls that did: stratus_cloud_requests_total{result="refused"}.
func (c *Cloud) CountRefused(op string) {
	c.metrics.requests.WithLabelValues(op, ResultRefused).Inc()
}
