package kit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Each class of error becomes one queue action, one result label, one
// reason and one retry time, whichever policy the controller has.
func TestBackoffOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	boom := errors.New("boom")
	throttled := fmt.Errorf("ensure: %w", cloudproviderapi.NewRetryError(fmt.Errorf("%w: 429", cloud.ErrThrottled).Error(), 3*time.Second))
	// A RetryError whose chain also names ErrThrottled.
	throttled = fmt.Errorf("%w: %w", cloud.ErrThrottled, throttled)
	cases := []struct {
		name    string
		err     error
		result  string
		reason  string
		retryIn time.Duration
		requeue time.Duration
		errOut  bool
		failed  bool
		why     string
	}{
		{name: "nil", err: nil, result: kit.ResultSuccess},
		{name: "plain error", err: boom, result: kit.ResultError, reason: kit.ReasonRetryingAfterError,
			retryIn: 2 * time.Second, errOut: true, failed: true, why: "per-Thing exponential backoff (2s to 1m0s)"},
		{name: "throttled is still a failure without a RetryError", err: fmt.Errorf("%w: 429", cloud.ErrThrottled),
			result: kit.ResultError, reason: kit.ReasonRetryingAfterError, retryIn: 2 * time.Second, errOut: true, failed: true, why: "backoff"},
		{name: "retry after 3s", err: cloudproviderapi.NewRetryError("provisioning", 3*time.Second), result: kit.ResultRetry,
			reason: kit.ReasonWaitingForCloud, retryIn: 3 * time.Second, requeue: 3 * time.Second, why: "RetryError"},
		{name: "wrapped", err: fmt.Errorf("ensure lb: %w", cloudproviderapi.NewRetryError("provisioning", time.Second)),
			result: kit.ResultRetry, reason: kit.ReasonWaitingForCloud, retryIn: time.Second, requeue: time.Second, why: "RetryError"},
		{name: "no delay takes the minimum", err: cloudproviderapi.NewRetryError("now", 0), result: kit.ResultRetry,
			reason: kit.ReasonWaitingForCloud, retryIn: kit.MinRetryAfter, requeue: kit.MinRetryAfter, why: "RetryError"},
		{name: "a tiny delay takes the minimum", err: cloudproviderapi.NewRetryError("soon", time.Millisecond), result: kit.ResultRetry,
			reason: kit.ReasonWaitingForCloud, retryIn: kit.MinRetryAfter, requeue: kit.MinRetryAfter, why: "RetryError"},
		{name: "throttled RetryError", err: throttled, result: kit.ResultRetry, reason: kit.ReasonThrottled,
			retryIn: 3 * time.Second, requeue: 3 * time.Second, why: "throttled"},
	}
	for _, c := range cases {
		b := kit.NewBackoff[string]("per-Thing", 2*time.Second, time.Minute)
		o := b.Outcome(ctx, "k", c.err)
		res, err := o.Reconcile()
		if o.Result != c.result || o.Reason != c.reason || o.RetryIn != c.retryIn || o.Failed() != c.failed || !errors.Is(o.Err, c.err) {
			t.Errorf("%s: outcome %+v; want result %q, reason %q, retry in %v, failed %t", c.name, o, c.result, c.reason, c.retryIn, c.failed)
		}
		if res.RequeueAfter != c.requeue || (err != nil) != c.errOut || (c.errOut && !errors.Is(err, c.err)) {
			t.Errorf("%s: Reconcile = %+v, %v; want RequeueAfter %v, error returned %t", c.name, res, err, c.requeue, c.errOut)
		}
		if kit.ResultOf(c.err) != c.result {
			t.Errorf("%s: ResultOf = %q, want %q", c.name, kit.ResultOf(c.err), c.result)
		}
		if !containsOrEmpty(o.Why, c.why) {
			t.Errorf("%s: why %q, want it to say %q", c.name, o.Why, c.why)
		}
		e := o.Explain()
		if !errors.Is(e.Err, o.Err) || e.Retry != (c.result == kit.ResultRetry) || e.RetryIn != o.RetryIn || e.RetryWhy != o.Why {
			t.Errorf("%s: explain outcome %+v does not carry %+v", c.name, e, o)
		}
	}
}

func containsOrEmpty(s, sub string) bool {
	if sub == "" {
		return s == ""
	}
	return strings.Contains(s, sub)
}

// A resyncing backoff (a periodic pass) comes back after its period on
// success, and treats errors as any other Backoff does.
func TestBackoffResyncing(t *testing.T) {
	t.Parallel()
	b := kit.NewBackoff[string]("pass", time.Second, 10*time.Second).Resyncing(10 * time.Second)
	if res, err := b.Outcome(context.Background(), "p", nil).Reconcile(); err != nil || res.RequeueAfter != 10*time.Second {
		t.Errorf("success: %+v, %v; want a requeue after the period", res, err)
	}
	o := b.Outcome(context.Background(), "p", errors.New("boom"))
	if res, err := o.Reconcile(); err == nil || res != (reconcile.Result{}) || o.RetryIn != time.Second {
		t.Errorf("failure: %+v, %v, retry in %v; want the error returned for a 1s backoff", res, err, o.RetryIn)
	}
}

// The periodic policy requeues after the period whatever happened and
// never hands the queue an error.
func TestPeriodicOutcome(t *testing.T) {
	t.Parallel()
	p := kit.Periodic{Period: 7 * time.Second, Why: "the next period"}
	for _, c := range []struct {
		name    string
		o       kit.Outcome
		result  string
		reason  string
		retryIn time.Duration
	}{
		{"nil", p.Outcome(nil), kit.ResultSuccess, "", 0},
		{"deferred", p.Deferred(), kit.ResultSuccess, "", 7 * time.Second},
		{"error", p.Outcome(errors.New("boom")), kit.ResultError, kit.ReasonRetryingAfterError, 7 * time.Second},
		{"RetryError", p.Outcome(cloudproviderapi.NewRetryError("429", time.Millisecond)), kit.ResultRetry, kit.ReasonWaitingForCloud, 7 * time.Second},
	} {
		res, err := c.o.Reconcile()
		if err != nil || res.RequeueAfter != 7*time.Second {
			t.Errorf("%s: Reconcile = %+v, %v; want a requeue after the period and no error", c.name, res, err)
		}
		if c.o.Result != c.result || c.o.Reason != c.reason || c.o.RetryIn != c.retryIn || (c.retryIn > 0) != (c.o.Why == p.Why) {
			t.Errorf("%s: outcome %+v; want result %q, reason %q, retry in %v", c.name, c.o, c.result, c.reason, c.retryIn)
		}
	}
}

// What an Outcome quotes for the nth failure in a row is the delay the
// work queue then takes from the limiter when the error comes back
// (controller-runtime's AddRateLimited), up to the cap and past it; and
// that limiter behaves as upstream's exponential one of the same bounds
// always did, so handing the queue a Backoff changes nothing.
func TestBackoffQuotesTheQueuesDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := kit.NewBackoff[string]("per-Thing", 250*time.Millisecond, 5*time.Minute)
	rec := &kittest.RecordingLimiter[string]{TypedRateLimiter: b}
	q := workqueue.NewTypedRateLimitingQueue[string](rec)
	defer q.ShutDown()
	upstream := workqueue.NewTypedItemExponentialFailureRateLimiter[string](250*time.Millisecond, 5*time.Minute)
	for n := range 16 {
		o := b.Outcome(ctx, "k", errors.New("boom"))
		if _, err := o.Reconcile(); err == nil {
			t.Fatalf("failure %d: no error for the queue", n)
		}
		q.AddRateLimited("k") // what controller-runtime does with the returned error
		if rec.Last != o.RetryIn {
			t.Errorf("failure %d: the outcome quotes %v, the queue waits %v", n, o.RetryIn, rec.Last)
		}
		if want := upstream.When("k"); rec.Last != want {
			t.Errorf("failure %d: the queue waits %v, upstream's limiter %v", n, rec.Last, want)
		}
	}
	// A RetryError and a success forget the failures, as controller-runtime does.
	b.Forget("k")
	if o := b.Outcome(ctx, "k", errors.New("boom")); o.RetryIn != 250*time.Millisecond {
		t.Errorf("after Forget the outcome quotes %v, want the base", o.RetryIn)
	}
}

func TestExponentialDelay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		base, maxDelay time.Duration
		n              int
		want           time.Duration
	}{
		{time.Second, time.Minute, 0, time.Second},
		{time.Second, time.Minute, 1, 2 * time.Second},
		{time.Second, time.Minute, 5, 32 * time.Second},
		{time.Second, time.Minute, 6, time.Minute},
		{time.Second, time.Minute, 1 << 20, time.Minute},
		{time.Minute, time.Second, 0, time.Second},
	} {
		if got := kit.ExponentialDelay(c.base, c.maxDelay, c.n); got != c.want {
			t.Errorf("ExponentialDelay(%v, %v, %d) = %v, want %v", c.base, c.maxDelay, c.n, got, c.want)
		}
	}
}

// A failure the cloud caused is an outage: it says so in its Why and
// enters the OutageSet; an object's own error, a retry and a success do not,
// and take the key out again.
func TestOutageOnlyForCloudFaults(t *testing.T) {
	b := kit.NewBackoff[string]("per-Thing", time.Second, time.Minute)
	ctx := context.Background()
	var set kit.OutageSet[string]
	down := b.Outcome(ctx, "a", kittest.HTTPError(503))
	if !down.Outage() || !strings.HasSuffix(down.Why, kit.OutageRetryNote) {
		t.Errorf("503: Outage() = %v, Why %q; want an outage that says it is retried at recovery", down.Outage(), down.Why)
	}
	set.Note("a", down)
	own := b.Outcome(ctx, "b", errors.New(`providerID "aws:///x/i-1": not this cloud's`))
	if own.Outage() || !own.Failed() || strings.Contains(own.Why, kit.OutageRetryNote) {
		t.Errorf("an object's own error: Outage() = %v, Failed() = %v, Why %q; want a failure that only its backoff retries", own.Outage(), own.Failed(), own.Why)
	}
	set.Note("b", own)
	set.Note("c", b.Outcome(ctx, "c", kittest.HTTPError(429)))
	if got := set.Keys(); len(got) != 2 || !slices.Contains(got, "a") || !slices.Contains(got, "c") {
		t.Errorf("OutageSet = %v, want [a c]", got)
	}
	set.Note("a", b.Outcome(ctx, "a", nil))
	set.Forget("c")
	if got := set.Keys(); len(got) != 0 {
		t.Errorf("OutageSet after a's success and c's deletion = %v, want none", got)
	}
}
