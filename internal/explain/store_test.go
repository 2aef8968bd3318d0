package explain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/internal/controllerctx"
)

func TestStoreRecordsSyncsAndCloudCalls(t *testing.T) {
	s := NewStore()
	now := time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	ref := Ref{Kind: KindService, Namespace: "default", Name: "web"}
	ctx := WithObject(controllerctx.With(context.Background(), "service-lb-controller"), ref)

	s.CloudCall(ctx, "EnsureLoadBalancer", "error", 1500*time.Microsecond, errors.New("quota loadBalancers exceeded (limit 0)"))
	s.CloudCall(context.Background(), "ListInstances", "success", time.Millisecond, nil) // for no object: not recorded
	s.Synced(ref, "service-lb-controller", Outcome{Err: errors.New("quota loadBalancers exceeded (limit 0)"), RetryIn: 5 * time.Second, RetryWhy: "backoff"})
	s.Synced(ref, "service-lb-controller", Outcome{Err: errors.New("quota again"), RetryIn: 10 * time.Second, RetryWhy: "backoff"})

	got := s.Explain(context.Background(), ref)
	if !got.Known || len(got.Syncs) != 1 || len(got.CloudOps) != 1 || got.CloudOpsTotal != 1 {
		t.Fatalf("explanation %+v: want one sync and one cloud call", got)
	}
	sy := got.Syncs[0]
	if sy.Result != ResultError || sy.Attempts != 2 || sy.LastError != "quota again" || sy.RetryWhy != "backoff" ||
		sy.NextRetry == nil || !sy.NextRetry.Equal(now.Add(10*time.Second)) {
		t.Errorf("sync %+v: want the second failure, retried with backoff in 10s", sy)
	}
	op := got.CloudOps[0]
	if op.Operation != "EnsureLoadBalancer" || op.Result != "error" || op.Latency != "1.5ms" || op.Controller != "service-lb-controller" || !strings.Contains(op.Error, "quota") {
		t.Errorf("cloud op %+v", op)
	}

	s.Synced(ref, "service-lb-controller", Outcome{})
	if sy := s.Explain(context.Background(), ref).Syncs[0]; sy.Result != ResultSuccess || sy.Attempts != 0 || sy.NextRetry != nil || sy.LastError != "quota again" {
		t.Errorf("after a success: %+v; want success, no attempts, no retry, the last error kept", sy)
	}
	s.Forget(ref)
	if got := s.Explain(context.Background(), ref); got.Known || s.Len() != 0 {
		t.Errorf("a forgotten object is still explained: %+v", got)
	}
}

func TestStoreIsBounded(t *testing.T) {
	s := NewStore()
	s.max = 3
	at := time.Unix(0, 0)
	s.now = func() time.Time { at = at.Add(time.Second); return at }
	ref := Ref{Kind: KindNode, Name: "n0"}
	ctx := WithObject(context.Background(), ref)
	for i := range 3 * OpsPerObject {
		s.CloudCall(ctx, fmt.Sprintf("op%d", i), "success", time.Millisecond, nil)
	}
	got := s.Explain(context.Background(), ref)
	if len(got.CloudOps) != OpsPerObject || got.CloudOpsTotal != 3*OpsPerObject || got.CloudOps[0].Operation != fmt.Sprintf("op%d", 2*OpsPerObject) {
		t.Errorf("ring holds %d calls from %q (total %d); want the last %d", len(got.CloudOps), got.CloudOps[0].Operation, got.CloudOpsTotal, OpsPerObject)
	}
	for i := 1; i <= 3; i++ {
		s.Synced(Ref{Kind: KindNode, Name: fmt.Sprintf("n%d", i)}, "c", Outcome{})
	}
	if s.Len() != 3 || s.Explain(context.Background(), ref).Known {
		t.Errorf("Store holds %d objects, n0 known: %t; want 3, the oldest dropped", s.Len(), s.Explain(context.Background(), ref).Known)
	}
	var nilStore *Store
	nilStore.Synced(ref, "c", Outcome{}) // must not panic
	nilStore.CloudCall(ctx, "op", "success", 0, nil)
}

func TestHandler(t *testing.T) {
	s := NewStore()
	ref := Ref{Kind: KindNode, Name: "n1"}
	s.Synced(ref, "cloud-node-controller", Outcome{Err: errors.New("instance not found"), RetryIn: time.Second, RetryWhy: "backoff"})
	s.Describe(KindNode, "service-lb-controller", func(_ context.Context, r Ref) []string {
		return []string{"excluded from load balancers: " + r.Name + " carries node.kubernetes.io/exclude-from-external-load-balancers"}
	})
	leading := true
	h := Handler(s, func() (string, bool, string) { return "replica-a", leading, "replica-a" })
	get := func(query string) (int, Explanation, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, Path+"?"+query, nil))
		var out Explanation
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out, rec.Body.String()
	}
	code, out, body := get("kind=node&name=n1")
	if code != http.StatusOK || !out.Known || len(out.Syncs) != 1 || out.Syncs[0].LastError != "instance not found" ||
		len(out.Details) != 1 || !strings.Contains(out.Details[0].Lines[0], "exclude-from-external-load-balancers") {
		t.Errorf("GET node n1 = %d %s", code, body)
	}
	for _, bad := range []string{"kind=pod&name=x", "kind=service&name=web", "kind=node&name=ns/n1", "kind=node"} {
		if code, _, body := get(bad); code != http.StatusBadRequest || !strings.Contains(body, "message") {
			t.Errorf("GET %s = %d %s, want 400 with a message", bad, code, body)
		}
	}
	leading = false
	h = Handler(s, func() (string, bool, string) { return "replica-b", leading, "replica-a" })
	if code, out, body := get("kind=node&name=n1"); code != http.StatusOK || out.Leading || out.Leader != "replica-a" || out.Known {
		t.Errorf("a standby answered %d %s; want who leads and nothing else", code, body)
	}
}

// TestPacedCallsAreExplained: a call the pacer holds back is explained
// while it waits; the controller's next sync says how long its calls
// waited and why, in its retry's why when it retries; the sums start
// afresh after each sync.
func TestPacedCallsAreExplained(t *testing.T) {
	s := NewStore()
	now := time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	ref := Ref{Kind: KindService, Namespace: "default", Name: "web"}
	ctx := WithObject(controllerctx.With(context.Background(), "service-lb-controller"), ref)
	why := "the cloud throttled this class of calls and asked to wait (Retry-After, until 2026-11-26T19:00:02Z)"

	s.Paced(ctx, "EnsureLoadBalancer", 2*time.Second, why)
	s.Paced(context.Background(), "ListInstances", time.Second, "no object") // not recorded
	got := s.Explain(context.Background(), ref)
	if w := got.Waiting; w == nil || w.Operation != "EnsureLoadBalancer" || w.Controller != "service-lb-controller" ||
		!w.Until.Equal(now.Add(2*time.Second)) || w.Why != why {
		t.Fatalf("waiting %+v; want EnsureLoadBalancer held 2s by the Retry-After", w)
	}
	s.Paced(ctx, "GetLoadBalancer", 500*time.Millisecond, "slow start")
	now = now.Add(3 * time.Second)
	if got := s.Explain(context.Background(), ref); got.Waiting != nil {
		t.Errorf("a wait that ended is still shown: %+v", got.Waiting)
	}
	s.Synced(ref, "service-lb-controller", Outcome{Err: errors.New("quota"), RetryIn: 5 * time.Second, RetryWhy: "backoff"})
	sy := s.Explain(context.Background(), ref).Syncs[0]
	want := "paced: 2 cloud call(s) waited 2.5s in the client-side pacer, EnsureLoadBalancer the longest (2s): " + why
	if sy.Pacing != want || sy.RetryWhy != "backoff; "+want {
		t.Errorf("sync pacing %q, retry why %q; want %q in both", sy.Pacing, sy.RetryWhy, want)
	}
	s.Synced(ref, "service-lb-controller", Outcome{})
	if sy := s.Explain(context.Background(), ref).Syncs[0]; sy.Pacing != "" {
		t.Errorf("a sync whose calls did not wait says %q", sy.Pacing)
	}
}
