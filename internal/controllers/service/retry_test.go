package service

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
	"github.com/stratus-ccm/stratus/internal/explain"
)

// For the nth failure in a row, the retry the conditions and explain quote
// is the delay the work queue then takes when the error comes back to it
// (controller-runtime's AddRateLimited), up to the cap and past it.
func TestQuotedRetryIsTheQueuesBackoff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{MinRetryDelay: time.Second, MaxRetryDelay: 30 * time.Second}, lbService("ns", "web"), node("n1"))
	now := time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC)
	h.c.now = func() time.Time { return now }
	store := explain.NewStore()
	h.c.explain = store
	rec := &kittest.RecordingLimiter[key]{TypedRateLimiter: h.c.limiter}
	q := workqueue.NewTypedRateLimitingQueue[key](rec)
	defer q.ShutDown()
	ctx := context.Background()
	k := key{Service: nn("ns/web")}
	for n := range 8 {
		h.lb.FailNext("EnsureLoadBalancer", errors.New("backend pool busy"))
		if _, err := h.c.Reconcile(ctx, k); err == nil {
			t.Fatalf("failure %d: Reconcile returned no error", n)
		}
		q.AddRateLimited(k)
		d := rec.Last
		wantCondition(t, h.service("ns", "web"), ConditionProvisioning, metav1.ConditionTrue, ReasonRetryingAfterError,
			fmt.Sprintf("next retry at %s (in %s)", now.Add(d).Format(time.RFC3339), d))
		s := store.Explain(ctx, serviceRef(k.Service)).Syncs[0]
		if s.NextRetry == nil || s.NextRetry.Sub(s.Time) != d {
			t.Errorf("failure %d: explain quotes the next retry at %v after %v; the queue waits %v", n, s.NextRetry, s.Time, d)
		}
	}
	if rec.Last != 30*time.Second {
		t.Errorf("after 8 failures the queue waits %v, want the 30s cap", rec.Last)
	}
}
