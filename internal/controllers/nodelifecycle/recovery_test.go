package nodelifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// A monitor period that failed because the cloud did is run again as soon
// as the cloud answers, not a period later; one that failed on the Nodes'
// own errors (providerIDs the provider cannot parse) is not: running it
// early would only ask the cloud about those Nodes again, at every
// recovery.
func TestPeriodRunsWhenCloudRecovers(t *testing.T) {
	fc := cloudfake.New()
	h := newHarness(t, fc, false, node("a", corev1.ConditionFalse), node("b", corev1.ConditionFalse))
	rec := &kittest.Recovery{}
	c, err := New(Deps{Deps: kit.Deps{Client: h.client, Recovery: rec}, Instances: fc}, Config{Period: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[pass]())
	defer q.ShutDown()
	rec.Fire() // before start: nothing to queue, and no panic
	c.queue.Set(q)
	ctx := context.Background()
	period := func(err error, wantQueued int) {
		t.Helper()
		fc.SetError("", err)
		if _, rerr := c.Reconcile(ctx, pass{}); rerr != nil {
			t.Fatalf("Reconcile: %v", rerr)
		}
		rec.Fire()
		if n := q.Len(); n != wantQueued {
			t.Fatalf("after a period failing with %v, a recovery left %d passes queued, want %d", err, n, wantQueued)
		}
		if n := q.Len(); n > 0 {
			p, _ := q.Get()
			q.Done(p)
		}
	}
	period(fmt.Errorf("providerID %q: not this cloud's", "aws:///us-east-1a/i-1"), 0)
	period(kittest.HTTPError(400), 0)
	period(kittest.HTTPError(503), 1)
	period(nil, 0)
}
