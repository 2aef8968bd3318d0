package cloudwrap

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// requestPacedProvider sends perCall requests per call through the gate it
// was handed, as a provider whose client retries or polls does; request
// number throttleOn (from 1) is answered 429 with retryAfter.
type requestPacedProvider struct {
	stubProvider
	gate       cloud.RequestGate
	perCall    int
	retryAfter time.Duration
	throttleOn int32
	sent       atomic.Int32
}

func (p *requestPacedProvider) PaceRequestsWith(g cloud.RequestGate) { p.gate = g }

func (p *requestPacedProvider) InstancesV2() (cloudprovider.InstancesV2, bool) { return p, true }

func (p *requestPacedProvider) OperationClass(op string) string { return cloud.ReadWriteClass(op) }

func (p *requestPacedProvider) InstanceExists(ctx context.Context, _ *corev1.Node) (bool, error) {
	p.calls.Add(1)
	for range p.perCall {
		done, err := p.gate(ctx)
		if err != nil {
			return false, err
		}
		if p.sent.Add(1) == p.throttleOn {
			done(true, p.retryAfter)
			continue
		}
		done(false, 0)
	}
	return true, nil
}

// A RequestPacer's requests, not its calls, are paced: each request of a
// call waits in the gate, in the call's class, and each throttled request
// counts and slows that class alone.
func TestWrapperPacesAProvidersRequests(t *testing.T) {
	t.Parallel()
	p := &requestPacedProvider{perCall: 3, retryAfter: 2 * time.Second, throttleOn: 3}
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	c, _ := instrument(t, p, Options{Clock: clk})
	if p.gate == nil {
		t.Fatal("the wrapper did not hand the provider a request gate")
	}
	i, _ := c.InstancesV2()
	ctx := context.Background()
	if _, err := i.InstanceExists(ctx, &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.metrics.throttled.WithLabelValues(cloud.ClassRead)); got != 1 {
		t.Errorf("%s{class=read} = %v after one throttled request, want 1", MetricThrottledTotal, got)
	}
	if got := testutil.CollectAndCount(c.metrics.limiterWait); got != 1 {
		t.Fatalf("%s: %d series, want 1", MetricLimiterWait, got)
	}
	if got := requests(t, c, "InstanceExists", ResultSuccess); got != 1 {
		t.Errorf("%s{InstanceExists,success} = %v, want 1 call", MetricRequestsTotal, got)
	}
	if c.pacing.class("InstanceExists").current() == 0 {
		t.Error("a throttled request set no limit on its class")
	}
	if c.pacing.class("EnsureLoadBalancer").current() != 0 {
		t.Error("a throttled read slowed the write class")
	}

	// The throttled request's Retry-After holds the next call's requests,
	// while the call itself reached the provider at once.
	done := make(chan error, 1)
	go func() {
		_, err := i.InstanceExists(ctx, &corev1.Node{})
		done <- err
	}()
	waitForWaiter(t, clk)
	if got := p.calls.Load(); got != 2 {
		t.Errorf("provider reached %d times, want 2: calls must not wait when requests are paced", got)
	}
	if got := p.sent.Load(); got != 3 {
		t.Errorf("%d requests sent within the Retry-After, want the first call's 3", got)
	}
	for p.sent.Load() < 6 {
		select {
		case err := <-done:
			t.Fatalf("call ended after %d requests: %v", p.sent.Load(), err)
		default:
		}
		clk.Step(100 * time.Millisecond)
		waitForWaiterOrDone(t, clk, p, 6)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if at := clk.Since(time.Unix(1_700_000_000, 0)); at < 2*time.Second {
		t.Errorf("second call's requests went %v after the throttled one, want at least its 2 s Retry-After", at)
	}
}

// waitForWaiterOrDone waits until the gate holds a request again or n
// requests were sent.
func waitForWaiterOrDone(t *testing.T, clk *clocktesting.FakeClock, p *requestPacedProvider, n int32) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return clk.HasWaiters() || p.sent.Load() >= n, nil })
	if err != nil {
		t.Fatalf("after %d requests, none waits for the pacer and the call is not done", p.sent.Load())
	}
}
