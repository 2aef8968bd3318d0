package kit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/internal/explain"
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

// Reasons an operator reads for a sync that did not succeed, in the
// CamelCase of a condition's or an event's reason. The service controller's
// conditions carry them as they are.
const (
	// ReasonWaitingForCloud: the provider asked to come back later (a
	// RetryError), as while the cloud provisions.
	ReasonWaitingForCloud = "WaitingForCloud"
	// ReasonThrottled: a RetryError for the cloud's rate limit
	// (cloud.ErrThrottled); the retry waits for the delay it named.
	ReasonThrottled = "Throttled"
	// ReasonRetryingAfterError: the sync failed; it is retried after the
	// controller's backoff or at its next period.
	ReasonRetryingAfterError = "RetryingAfterError"
)

// ResultOf is the one classification of a sync's or a cloud call's error:
// ResultSuccess for nil, ResultRetry for a RetryError anywhere in its chain
// (the cloud's normal answer for work in progress: no warning event, no
// failure counted), ResultError for anything else. Every Outcome is built
// on it, and a controller asks it rather than cloud.RetryAfter, so that
// what counts as a failure is decided here only.
func ResultOf(err error) string {
	if err == nil {
		return ResultSuccess
	}
	if _, ok := cloud.RetryAfter(err); ok {
		return ResultRetry
	}
	return ResultError
}

// Outcome is how one sync ended, decided once, in the kit: what the queue
// does with the key next, when the key is synced again and why, and the
// result label of the controller's metrics. Metrics, explain, a Service's
// conditions and a controller's recovery set all read it, so that none
// classifies the error again and none quotes a retry the queue will not
// make. Build it with Backoff.Outcome or Periodic.Outcome.
type Outcome struct {
	// Err is what the sync returned; nil is success.
	Err error
	// Result is the metrics' result label (ResultOf(Err)).
	Result string
	// Reason is "" on success, else one of the Reason constants.
	Reason string
	// RetryIn is when the key is synced again; zero for none scheduled.
	RetryIn time.Duration
	// Why says why it is synced again then, for an operator.
	Why string
	// CloudFault is set on a failure the cloud caused (cloud.IsCloudFault:
	// a timeout, a refused connection, a 5xx), as opposed to the object's
	// own error (an invalid argument, a quota, a providerID the provider
	// cannot parse).
	CloudFault bool

	// res and returned are what Reconcile hands the queue.
	res      reconcile.Result
	returned error
}

// Failed reports whether the sync failed: an error that is not the
// cloud's "come back later". The queue's backoff counts it.
func (o Outcome) Failed() bool { return o.Result == ResultError }

// Outage reports whether the sync failed because the cloud did: what a
// controller retries at once when the cloud answers again after an outage
// (cloud.RecoveryNotifier). An object's own error keeps its backoff, so
// that the retry its condition and explain quote is the one it gets.
func (o Outcome) Outage() bool { return o.Failed() && o.CloudFault }

// Reconcile is what the controller's Reconcile returns for this outcome:
// controller-runtime requeues after RequeueAfter (forgetting the key's
// backoff) or, for a returned error, after the queue's backoff.
func (o Outcome) Reconcile() (reconcile.Result, error) { return o.res, o.returned }

// Explain is the outcome as the explain record takes it.
func (o Outcome) Explain() explain.Outcome {
	return explain.Outcome{Err: o.Err, Retry: o.Result == ResultRetry, RetryIn: o.RetryIn, RetryWhy: o.Why}
}

// decide classifies err and fills in what every policy shares: a
// RetryError's reason; the rest is the policy's.
func decide(err error) Outcome {
	o := Outcome{Err: err, Result: ResultOf(err)}
	switch o.Result {
	case ResultRetry:
		o.Reason = ReasonWaitingForCloud
		if errors.Is(err, cloud.ErrThrottled) {
			o.Reason = ReasonThrottled
		}
	case ResultError:
		o.Reason = ReasonRetryingAfterError
		o.CloudFault = cloud.IsCloudFault(err)
	}
	return o
}

// retryAfter is the requeue a RetryError in err's chain asks for, at least
// MinRetryAfter.
func retryAfter(err error) time.Duration {
	d, _ := cloud.RetryAfter(err)
	return max(d, MinRetryAfter)
}

// Backoff is a controller's per-key retry policy and the rate limiter of
// its work queue in one: pass it as the controller's RateLimiter, and its
// Outcome quotes the delay that very limiter will give the failure being
// reported. The limiter is upstream's per-item exponential one.
type Backoff[T comparable] struct {
	workqueue.TypedRateLimiter[T]
	base, max time.Duration
	// per names whose backoff it is, for an operator ("per-Service").
	per string
	// resync requeues a key after a success; zero leaves it.
	resync time.Duration
}

// NewBackoff returns the per-key exponential backoff from base to
// maxDelay; per names it in the reason an operator reads ("per-Node").
func NewBackoff[T comparable](per string, base, maxDelay time.Duration) *Backoff[T] {
	return &Backoff[T]{
		TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[T](base, maxDelay),
		base:             base, max: maxDelay, per: per,
	}
}

// Resyncing makes a success come back after every: a controller whose
// key is a periodic pass (the route table) schedules the next one so. It
// is set once, when the controller is built.
func (b *Backoff[T]) Resyncing(every time.Duration) *Backoff[T] {
	b.resync = every
	return b
}

// Next is the delay the queue will give item's failure being reported
// now: the limiter counts a failure only once Reconcile has returned it,
// so this is the delay after the NumRequeues failures it has counted.
func (b *Backoff[T]) Next(item T) time.Duration {
	return ExponentialDelay(b.base, b.max, b.NumRequeues(item))
}

// Outcome decides how item's sync that returned err ended: nil is done
// (or, when resyncing, back after the period); a RetryError is requeued
// after the delay it names, at least MinRetryAfter, without touching the
// backoff, and logged at V(2) only; any other error is returned, for the
// queue's backoff, which Next quotes.
func (b *Backoff[T]) Outcome(ctx context.Context, item T, err error) Outcome {
	o := decide(err)
	switch o.Result {
	case ResultSuccess:
		o.res.RequeueAfter = b.resync
	case ResultRetry:
		o.RetryIn = retryAfter(err)
		o.Why = "the cloud asked to come back later (RetryError)"
		if o.Reason == ReasonThrottled {
			o.Why = "the cloud throttled the call; retry after its Retry-After"
		}
		o.res.RequeueAfter = o.RetryIn
		klog.FromContext(ctx).V(2).Info("Cloud asked to retry later", "after", o.RetryIn, "reason", err.Error())
	default:
		o.RetryIn = b.Next(item)
		o.Why = fmt.Sprintf("%s exponential backoff (%s to %s)", b.per, b.base, b.max)
		if o.CloudFault {
			o.Why += OutageRetryNote
		}
		o.returned = err
	}
	return o
}

// ExponentialDelay is the delay upstream's per-item exponential limiter,
// the one every Backoff is, gives the failure that follows n counted ones:
// base doubled n times, at most maxDelay. The workqueue cannot be asked
// without counting a failure, so a limiter of the same bounds is asked
// instead, n+1 times or until it reaches maxDelay (a few dozen calls at
// most), rather than the formula being written out again. A backoff that
// is not the queue's (the route controller's per-route one) uses it too.
func ExponentialDelay(base, maxDelay time.Duration, n int) time.Duration {
	probe := workqueue.NewTypedItemExponentialFailureRateLimiter[struct{}](base, maxDelay)
	var d time.Duration
	for range n + 1 {
		if d = probe.When(struct{}{}); d >= maxDelay {
			break
		}
	}
	return d
}

// OutageRetryNote ends the Why of a failure the cloud caused: such an
// object is also retried as soon as the cloud answers again.
const OutageRetryNote = ", or sooner when the cloud answers again after an outage"

// OutageSet holds the keys whose last sync failed because the cloud did
// (Outcome.Outage): what a controller re-queues when the cloud recovers.
// A key whose sync failed on its own error stays out, and keeps waiting
// out its backoff.
type OutageSet[T comparable] struct {
	mu   sync.Mutex
	keys map[T]struct{}
}

// Note records how k's last sync ended.
func (s *OutageSet[T]) Note(k T, o Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !o.Outage() {
		delete(s.keys, k)
		return
	}
	if s.keys == nil {
		s.keys = map[T]struct{}{}
	}
	s.keys[k] = struct{}{}
}

// Forget drops k (its object is gone).
func (s *OutageSet[T]) Forget(k T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, k)
}

// Keys returns the keys held, in no order.
func (s *OutageSet[T]) Keys() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.keys))
	for k := range s.keys {
		out = append(out, k)
	}
	return out
}

// Periodic is the retry policy of a controller whose every sync is
// followed by the next period, failed or not (the lifecycle monitor, as
// upstream's): a cloud that failed to answer is not asked again sooner,
// and a RetryError's delay gives way to the period.
type Periodic struct {
	// Period is the time between two syncs.
	Period time.Duration
	// Why says what the period is, for an operator.
	Why string
}

// Outcome decides how a sync that returned err ended: the key is requeued
// after the period, and no error reaches the queue (the controller logs
// it). A success says no retry: the next period is no retry of it.
func (p Periodic) Outcome(err error) Outcome {
	o := decide(err)
	o.res.RequeueAfter = p.Period
	if o.Result != ResultSuccess {
		o.RetryIn, o.Why = p.Period, p.Why
	}
	return o
}

// Deferred is the outcome of a sync that decided nothing for good without
// failing (a held deletion, a kept object): the next period looks again.
func (p Periodic) Deferred() Outcome {
	o := p.Outcome(nil)
	o.RetryIn, o.Why = p.Period, p.Why
	return o
}
