package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
)

// A Service whose sync failed during a cloud outage is queued again as soon
// as the cloud answers, not after the backoff it accumulated; one that
// synced since, never failed, or failed on its own account (a spec the
// cloud refused) is not: it keeps its backoff.
func TestFailedServicesRetriedWhenCloudRecovers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, lbService("ns", "web"), lbService("ns", "ok"), lbService("ns", "refused"), node("n1"))
	rec := &kittest.Recovery{}
	c, err := New(Deps{Deps: kit.Deps{Client: h.cl, Recorder: h.recorder, Recovery: rec}, APIReader: h.cl, LoadBalancer: h.lb}, Config{ClusterName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c.queue.Set(h.q)
	c.nodes.upsert(node("n1"))
	if rec.Subscribers() != 1 {
		t.Fatalf("controller subscribed %d times to recovery, want 1", rec.Subscribers())
	}
	ctx := context.Background()
	web, ok := serviceKey(h.service("ns", "web")), serviceKey(h.service("ns", "ok"))

	refused := serviceKey(h.service("ns", "refused"))

	invalid := kittest.HTTPError(400)
	h.lb.FailNext("EnsureLoadBalancer", invalid)
	if _, err := c.Reconcile(ctx, refused); !errors.Is(err, invalid) {
		t.Fatalf("sync of the refused Service: %v", err)
	}
	outage := kittest.HTTPError(503)
	h.lb.FailNext("EnsureLoadBalancer", outage)
	if _, err := c.Reconcile(ctx, web); !errors.Is(err, outage) {
		t.Fatalf("sync during the outage: %v", err)
	}
	// Their conditions tell the truth about the next retry.
	wantCondition(t, h.service("ns", "web"), ConditionProvisioning, metav1.ConditionTrue, ReasonRetryingAfterError,
		"or sooner when the cloud answers again")
	if c := meta.FindStatusCondition(h.service("ns", "refused").Status.Conditions, ConditionProvisioning); c == nil || strings.Contains(c.Message, "sooner") {
		t.Errorf("the refused Service's condition %+v promises an early retry it will not get", c)
	}
	// The backoff each built up: far longer than the test.
	h.q.AddAfter(web, time.Hour)
	h.q.AddAfter(refused, time.Hour)
	if _, err := c.Reconcile(ctx, ok); err != nil {
		t.Fatal(err)
	}
	if n := h.q.Len(); n != 0 {
		t.Fatalf("queue holds %d items before recovery, want 0 (web waits out its backoff)", n)
	}

	rec.Fire()
	if n := h.q.Len(); n != 1 {
		t.Fatalf("queue holds %d items after recovery, want 1 (web; refused keeps its backoff)", n)
	}
	got, _ := h.q.Get()
	h.q.Done(got)
	if got != web {
		t.Fatalf("queued %v, want %v", got, web)
	}
	if _, err := c.Reconcile(ctx, web); err != nil {
		t.Fatalf("sync after recovery: %v", err)
	}
	if st := h.service("ns", "web").Status.LoadBalancer; len(st.Ingress) == 0 {
		t.Fatal("web has no load balancer after the retry")
	}
	rec.Fire()
	if n := h.q.Len(); n != 0 {
		t.Fatalf("a recovery after web synced queued %d items, want 0", n)
	}
}
