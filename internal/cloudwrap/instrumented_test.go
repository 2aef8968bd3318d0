package cloudwrap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/cloud/fake"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// stubProvider answers InstancesV2 calls with a scripted error and counts
// how often the provider itself was reached.
type stubProvider struct {
	calls atomic.Int32
	err   error
}

func (p *stubProvider) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (p *stubProvider) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return nil, false }
func (p *stubProvider) Instances() (cloudprovider.Instances, bool)                        { return nil, false }
func (p *stubProvider) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return p, true }
func (p *stubProvider) Zones() (cloudprovider.Zones, bool)                                { return nil, false }
func (p *stubProvider) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (p *stubProvider) Routes() (cloudprovider.Routes, bool)                              { return nil, false }
func (p *stubProvider) ProviderName() string                                              { return "stub" }
func (p *stubProvider) HasClusterID() bool                                                { return true }

func (p *stubProvider) InstanceExists(context.Context, *corev1.Node) (bool, error) {
	p.calls.Add(1)
	return p.err == nil, p.err
}

func (p *stubProvider) InstanceShutdown(context.Context, *corev1.Node) (bool, error) {
	p.calls.Add(1)
	return false, p.err
}

func (p *stubProvider) InstanceMetadata(context.Context, *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	p.calls.Add(1)
	return &cloudprovider.InstanceMetadata{ProviderID: "stub://1"}, p.err
}

// listingProvider adds the list-all-instances extension.
type listingProvider struct{ stubProvider }

func (p *listingProvider) ListInstances(context.Context) ([]cloud.Instance, error) {
	p.calls.Add(1)
	return []cloud.Instance{{ProviderID: "stub://1", Name: "n1"}}, nil
}

func instrument(t *testing.T, p cloudprovider.Interface, o Options) (*Cloud, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	c, err := Instrument(p, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

func requests(t *testing.T, c *Cloud, op, result string) float64 {
	t.Helper()
	return testutil.ToFloat64(c.metrics.requests.WithLabelValues(op, result))
}

func TestCountsCallsByOperationAndResult(t *testing.T) {
	t.Parallel()
	p := &stubProvider{}
	c, reg := instrument(t, p, Options{})
	in, ok := c.InstancesV2()
	if !ok {
		t.Fatal("InstancesV2 not exposed")
	}
	ctx := context.Background()
	for range 3 {
		if _, err := in.InstanceExists(ctx, &corev1.Node{}); err != nil {
			t.Fatal(err)
		}
	}
	p.err = cloudprovider.InstanceNotFound
	_, _ = in.InstanceMetadata(ctx, &corev1.Node{})
	p.err = errors.New("boom")
	_, _ = in.InstanceShutdown(ctx, &corev1.Node{})

	if got := requests(t, c, "InstanceExists", ResultSuccess); got != 3 {
		t.Errorf("InstanceExists success = %v, want 3", got)
	}
	if got := requests(t, c, "InstanceMetadata", ResultNotFound); got != 1 {
		t.Errorf("InstanceMetadata not_found = %v, want 1", got)
	}
	if got := requests(t, c, "InstanceShutdown", ResultError); got != 1 {
		t.Errorf("InstanceShutdown error = %v, want 1", got)
	}
	n, err := testutil.GatherAndCount(reg, MetricRequestDuration)
	if err != nil || n != 3 {
		t.Errorf("duration series = %d (%v), want 3", n, err)
	}
}

func TestErrorsPassThroughWrapped(t *testing.T) {
	t.Parallel()
	p := &stubProvider{err: cloudprovider.InstanceNotFound}
	c, _ := instrument(t, p, Options{})
	in, _ := c.InstancesV2()
	_, err := in.InstanceExists(context.Background(), &corev1.Node{})
	if !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Fatalf("errors.Is(InstanceNotFound) lost: %v", err)
	}
	if !strings.Contains(err.Error(), "InstanceExists") {
		t.Errorf("error does not name the operation: %v", err)
	}
	if err == cloudprovider.InstanceNotFound { //nolint:errorlint // asserting the error is wrapped, not identical
		t.Error("error returned bare; want it wrapped with the operation")
	}

	p.err = cloudproviderapi.NewRetryError("provisioning", 7*time.Second)
	_, err = in.InstanceExists(context.Background(), &corev1.Node{})
	d, ok := cloud.RetryAfter(err)
	if !ok || d != 7*time.Second {
		t.Fatalf("RetryAfter = %v, %v; want 7s", d, ok)
	}
	if got := requests(t, c, "InstanceExists", ResultRetry); got != 1 {
		t.Errorf("retry result = %v, want 1", got)
	}
}

func TestRateLimitHoldsCallsBack(t *testing.T) {
	t.Parallel()
	p := &stubProvider{}
	// One token, refilled every 1000 s: the second call cannot be served
	// before its context's deadline, so the limiter must refuse it without
	// reaching the provider.
	c, _ := instrument(t, p, Options{QPS: 0.001, Burst: 1})
	in, _ := c.InstancesV2()
	if _, err := in.InstanceExists(context.Background(), &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := in.InstanceExists(ctx, &corev1.Node{})
	if err == nil {
		t.Fatal("second call within the limit window succeeded")
	}
	if p.calls.Load() != 1 {
		t.Errorf("provider reached %d times, want 1", p.calls.Load())
	}
	if got := requests(t, c, "InstanceExists", ResultCanceled); got != 1 {
		t.Errorf("canceled = %v, want 1", got)
	}
}

func TestExtensionsDetected(t *testing.T) {
	t.Parallel()
	plain, _ := instrument(t, &stubProvider{}, Options{})
	if _, ok := plain.InstanceLister(); ok {
		t.Error("InstanceLister reported for a provider without it")
	}
	p := &listingProvider{}
	c, _ := instrument(t, p, Options{})
	l, ok := c.InstanceLister()
	if !ok {
		t.Fatal("InstanceLister not detected")
	}
	got, err := l.ListInstances(context.Background())
	if err != nil || len(got) != 1 {
		t.Fatalf("ListInstances = %v, %v", got, err)
	}
	if n := requests(t, c, "ListInstances", ResultSuccess); n != 1 {
		t.Errorf("ListInstances counted %v times, want 1", n)
	}
}

func TestInstrumentRejectsBadOptions(t *testing.T) {
	t.Parallel()
	if _, err := Instrument(&stubProvider{}, Options{QPS: -1}); err == nil || !strings.Contains(err.Error(), "qps") {
		t.Errorf("negative qps: %v", err)
	}
	if _, err := Instrument(&stubProvider{}, Options{QPS: 5}); err == nil || !strings.Contains(err.Error(), "burst") {
		t.Errorf("zero burst: %v", err)
	}
	if _, err := Instrument(nil, Options{}); err == nil {
		t.Error("nil provider accepted")
	}
}

// The cloud counts as recovered on the first success after an outage
// (OutageThreshold failures in a row), once; a lone failure among
// successes, "not found" answers and retries the cloud asked for are not
// outages.
func TestRecoveredAfterOutage(t *testing.T) {
	t.Parallel()
	p := &stubProvider{}
	c, _ := instrument(t, p, Options{})
	var recovered atomic.Int32
	c.OnRecovered(func() { recovered.Add(1) })
	inst, _ := c.InstancesV2()
	ctx := context.Background()
	n := &corev1.Node{}
	step := func(err error, want int32) {
		t.Helper()
		p.err = err
		_, _ = inst.InstanceExists(ctx, n)
		if got := recovered.Load(); got != want {
			t.Fatalf("after a call returning %v: recovered %d times, want %d", err, got, want)
		}
	}
	down := &lcclient.APIError{StatusCode: 503, Code: "Unavailable", Message: "down"}
	refused := &lcclient.APIError{StatusCode: 400, Code: "InvalidArgument", Message: "bad spec"}
	unparsable := errors.New(`cannot parse providerID "aws:///us-east-1a/i-1"`)
	// One object's own errors, however many in a row, are answers: they
	// neither make an outage nor end one that is not there.
	for range 3 * OutageThreshold {
		step(refused, 0)
		step(unparsable, 0)
	}
	step(nil, 0)
	step(down, 0)
	step(nil, 0) // a lone failure is not an outage
	for range OutageThreshold - 1 {
		step(down, 0)
	}
	step(cloudproviderapi.NewRetryError("slow down", time.Second), 0)
	step(down, 0)
	step(nil, 1) // the outage ends
	step(nil, 1) // and is reported once
	for range OutageThreshold {
		step(down, 1)
	}
	step(cloudprovider.InstanceNotFound, 2) // an answer is an answer
	for range OutageThreshold {
		step(fmt.Errorf("call: %w", context.DeadlineExceeded), 2)
	}
	step(context.Canceled, 2) // this process gave up: no answer
	step(refused, 3)          // a refusal is the cloud answering
}

// NotifyNextCall reports exactly the next call, with its operation.
func TestNotifyNextCall(t *testing.T) {
	t.Parallel()
	c, _ := instrument(t, &stubProvider{}, Options{})
	in, _ := c.InstancesV2()
	ctx := context.Background()
	if _, err := in.InstanceExists(ctx, &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	var ops []string
	c.NotifyNextCall(func(_ context.Context, op string) { ops = append(ops, op) })
	_, _ = in.InstanceMetadata(ctx, &corev1.Node{})
	_, _ = in.InstanceExists(ctx, &corev1.Node{})
	if len(ops) != 1 || ops[0] != "InstanceMetadata" {
		t.Fatalf("notified of %v, want [InstanceMetadata]", ops)
	}
}

type ctxKey struct{}

// OnCall hears of each call the provider answered, with the caller's
// context, the result label and the error, so the daemon can record the
// calls made for each object.
func TestOnCallHearsEveryAnsweredCall(t *testing.T) {
	p := &stubProvider{err: cloudprovider.InstanceNotFound}
	type heard struct {
		obj, op, result string
		err             error
	}
	var got []heard
	c, _ := instrument(t, p, Options{OnCall: func(ctx context.Context, op, result string, _ time.Duration, err error) {
		obj, _ := ctx.Value(ctxKey{}).(string)
		got = append(got, heard{obj, op, result, err})
	}})
	in, _ := c.InstancesV2()
	ctx := context.WithValue(context.Background(), ctxKey{}, "node n1")
	if _, err := in.InstanceMetadata(ctx, &corev1.Node{}); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Fatalf("InstanceMetadata error %v", err)
	}
	if len(got) != 1 || got[0].obj != "node n1" || got[0].op != "InstanceMetadata" || got[0].result != ResultNotFound ||
		!errors.Is(got[0].err, cloudprovider.InstanceNotFound) {
		t.Errorf("OnCall heard %+v; want one InstanceMetadata not_found for node n1", got)
	}
}

func TestInstancesV2OrAdapted(t *testing.T) {
	t.Parallel()
	t.Run("InstancesV2 preferred", func(t *testing.T) {
		c, _ := instrument(t, &stubProvider{}, Options{})
		in, ok := c.InstancesV2OrAdapted()
		if !ok {
			t.Fatal("not available")
		}
		if _, isV2 := in.(*instancesV2); !isV2 {
			t.Errorf("got %T, want the instrumented InstancesV2", in)
		}
	})
	t.Run("neither", func(t *testing.T) {
		c, _ := instrument(t, &fake.Cloud{DisableInstancesV2: true}, Options{})
		if in, ok := c.InstancesV2OrAdapted(); ok || in != nil {
			t.Errorf("got %v, %v; want nil, false", in, ok)
		}
	})
	for _, hasZones := range []bool{true, false} {
		t.Run(fmt.Sprintf("v1 only, zones=%v", hasZones), func(t *testing.T) {
			f := fake.New(cloud.Instance{ProviderID: "fake://i-1", Name: "n1", Metadata: cloudprovider.InstanceMetadata{
				InstanceType: "small", Zone: "z1", Region: "r1",
				NodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}})
			f.DisableInstancesV2, f.EnableInstancesV1, f.DisableZones = true, true, !hasZones
			c, _ := instrument(t, f, Options{})
			in, ok := c.InstancesV2OrAdapted()
			if !ok {
				t.Fatal("not available")
			}
			node := &corev1.Node{}
			node.Name = "n1"
			md, err := in.InstanceMetadata(t.Context(), node)
			if err != nil {
				t.Fatal(err)
			}
			if md.ProviderID != "fake://i-1" || (md.Zone != "") != hasZones {
				t.Errorf("metadata = %+v", md)
			}
			// Each legacy call went through the instrumented wrapper.
			ops := []string{"InstanceID", "NodeAddressesByProviderID", "InstanceTypeByProviderID"}
			if hasZones {
				ops = append(ops, "GetZoneByProviderID")
			}
			for _, op := range ops {
				if got := requests(t, c, op, ResultSuccess); got != 1 {
					t.Errorf("%s counted %v times, want 1", op, got)
				}
				if got := f.CallCount(op); got != 1 {
					t.Errorf("%s reached the provider %d times, want 1", op, got)
				}
			}
			if got := requests(t, c, "GetZoneByProviderID", ResultSuccess); !hasZones && got != 0 {
				t.Errorf("GetZoneByProviderID counted %v times without Zones", got)
			}
		})
	}
}
