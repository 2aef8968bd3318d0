package cloudwrap

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// pacedHeard collects what OnPaced hears.
type pacedHeard struct {
	mu    sync.Mutex
	heard []string
}

func (h *pacedHeard) on(ctx context.Context, op string, wait time.Duration, why string) {
	obj, _ := ctx.Value(ctxKey{}).(string)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.heard = append(h.heard, obj+" "+op+" "+wait.Round(time.Second).String()+": "+why)
}

func (h *pacedHeard) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.heard...)
}

// OnPaced hears of a call the operator's ceiling holds back, before it
// waits, with the call's context: `stratus explain` says why the object's
// call waits, and for how long.
func TestOnPacedHearsTheCeiling(t *testing.T) {
	t.Parallel()
	var h pacedHeard
	c, _ := instrument(t, &stubProvider{}, Options{QPS: 0.001, Burst: 1, OnPaced: h.on})
	in, _ := c.InstancesV2()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "node n1"), 100*time.Millisecond)
	defer cancel()
	if _, err := in.InstanceExists(ctx, &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	if got := h.all(); len(got) != 0 {
		t.Fatalf("a call that did not wait was told as paced: %q", got)
	}
	if _, err := in.InstanceExists(ctx, &corev1.Node{}); err == nil {
		t.Fatal("a call the ceiling holds for 1000 s went within the deadline")
	}
	if got := h.all(); len(got) != 1 || got[0] != "node n1 InstanceExists 16m40s: the --cloud-api-qps ceiling of 0.001 calls/s" {
		t.Errorf("OnPaced heard %q; want the second call held 1000 s by the ceiling", got)
	}
}

// A RequestPacer's request waiting out the cloud's Retry-After is told
// with the call's operation and the throttled class.
func TestOnPacedHearsRetryAfter(t *testing.T) {
	t.Parallel()
	var h pacedHeard
	p := &requestPacedProvider{perCall: 1, retryAfter: 3 * time.Second, throttleOn: 1}
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	c, _ := instrument(t, p, Options{Clock: clk, OnPaced: h.on})
	in, _ := c.InstancesV2()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "node n2"))
	defer cancel()
	if _, err := in.InstanceExists(ctx, &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := in.InstanceExists(ctx, &corev1.Node{})
		done <- err
	}()
	waitForWaiter(t, clk)
	got := h.all()
	if len(got) != 1 || !strings.HasPrefix(got[0], "node n2 InstanceExists 3s: the cloud throttled this class of calls and asked to wait (Retry-After, until 2023-11-14T22:13:23Z)") ||
		!strings.HasSuffix(got[0], "(operation class read)") {
		t.Errorf("OnPaced heard %q; want the Retry-After wait of class read", got)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("a call whose context ended while it waited succeeded")
	}
}

// After a throttled burst, before the rate the cloud accepts is measured,
// the pacer climbs back in slow start and says so; once measured, it says
// it paces under the accepted rate.
func TestPacerSaysWhyCallsWait(t *testing.T) {
	t.Parallel()
	p := newPacer(0, 0)
	now := time.Unix(1_700_000_000, 0)
	for range 20 {
		p.reserve(now)
	}
	p.observe(now, now.Add(time.Millisecond), true, 0)
	var why string
	for range 50 {
		if _, w := p.reserveWhy(now.Add(time.Millisecond)); w != "" {
			why = w
		}
	}
	if !strings.HasPrefix(why, "slow start: the pacer climbs back at ") {
		t.Errorf("after an unmeasured throttled burst, calls wait because %q; want slow start", why)
	}
	// A second of answers accepted at 20/s, then a throttled one.
	at := now.Add(time.Second)
	for i := range 20 {
		p.observe(at, at.Add(time.Duration(i)*50*time.Millisecond), false, 0)
	}
	at = at.Add(time.Second)
	p.observe(at, at, true, 0)
	why = ""
	for range 50 {
		if _, w := p.reserveWhy(at); w != "" {
			why = w
		}
	}
	if !strings.HasPrefix(why, "adaptive pacing at ") || !strings.Contains(why, "calls/s the cloud accepted when it last throttled") {
		t.Errorf("after a measured throttled answer, calls wait because %q; want the adaptive limit", why)
	}
}
