package componentmetrics

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// Names of client-go's request metrics, as component-base registers them.
const (
	MetricRequestDuration     = "rest_client_request_duration_seconds"
	MetricDNSResolution       = "rest_client_dns_resolution_duration_seconds"
	MetricRequestSize         = "rest_client_request_size_bytes"
	MetricResponseSize        = "rest_client_response_size_bytes"
	MetricRateLimiterDuration = "rest_client_rate_limiter_duration_seconds"
	MetricRequests            = "rest_client_requests_total"
	MetricRequestRetries      = "rest_client_request_retries_total"
)

// component-base's buckets.
func latencyBuckets() []float64 {
	return []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}
}

func sizeBuckets() []float64 {
	return []float64{64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}
}

// restClient holds the request metrics; its methods are client-go's hooks.
type restClient struct {
	latency, rateLimiter, requestSize, responseSize, resolver *prometheus.HistogramVec
	results, retries                                          *prometheus.CounterVec
}

func newRestClient() *restClient {
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: "[ALPHA] " + help, Buckets: buckets}, labels)
	}
	dnsBuckets := latencyBuckets()[:11] // component-base's stop at 30 s
	return &restClient{
		latency:      hist(MetricRequestDuration, "Request latency in seconds. Broken down by verb, and host.", latencyBuckets(), "verb", "host"),
		resolver:     hist(MetricDNSResolution, "DNS resolver latency in seconds. Broken down by host.", dnsBuckets, "host"),
		requestSize:  hist(MetricRequestSize, "Request size in bytes. Broken down by verb and host.", sizeBuckets(), "verb", "host"),
		responseSize: hist(MetricResponseSize, "Response size in bytes. Broken down by verb and host.", sizeBuckets(), "verb", "host"),
		rateLimiter:  hist(MetricRateLimiterDuration, "Client side rate limiter latency in seconds. Broken down by verb, and host.", latencyBuckets(), "verb", "host"),
		// Without the stability prefix: controller-runtime registers this
		// counter under this help, and an equal one is reused, not refused.
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequests, Help: "Number of HTTP requests, partitioned by status code, method, and host.",
		}, []string{"code", "method", "host"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequestRetries, Help: "[ALPHA] Number of request retries, partitioned by status code, verb, and host.",
		}, []string{"code", "verb", "host"}),
	}
}

// The hooks, one type per client-go interface, each over one metric.
type (
	latencyHook  struct{ m *prometheus.HistogramVec }
	resolverHook struct{ m *prometheus.HistogramVec }
	sizeHook     struct{ m *prometheus.HistogramVec }
	resultHook   struct{ m *prometheus.CounterVec }
	retryHook    struct{ m *prometheus.CounterVec }
)

func (h latencyHook) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	h.m.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}

func (h resolverHook) Observe(_ context.Context, host string, d time.Duration) {
	h.m.WithLabelValues(host).Observe(d.Seconds())
}

func (h sizeHook) Observe(_ context.Context, verb, host string, size float64) {
	h.m.WithLabelValues(verb, host).Observe(size)
}

func (h resultHook) Increment(_ context.Context, code, method, host string) {
	h.m.WithLabelValues(code, method, host).Inc()
}

func (h retryHook) IncrementRetry(_ context.Context, code, method, host string) {
	h.m.WithLabelValues(code, method, host).Inc()
}

// InstallClientGo adds client-go's request metrics to reg and points
// client-go's hooks at them. The hooks are process-wide and client-go reads
// them on every request without synchronization, so a binary's main calls
// this before it builds its first API client, and only there: a later call
// (a test that runs the command in a process whose clients are already
// busy) changes nothing. A metric reg already holds under the same name and
// labels (controller-runtime's registry has rest_client_requests_total) is
// used rather than duplicated.
func InstallClientGo(reg prometheus.Registerer) error {
	if _, installed := clientmetrics.RequestLatency.(latencyHook); installed {
		return nil
	}
	rc := newRestClient()
	for _, h := range []*prometheus.HistogramVec{rc.latency, rc.resolver, rc.requestSize, rc.responseSize, rc.rateLimiter} {
		if err := reg.Register(h); err != nil {
			return fmt.Errorf("register client-go metrics: %w", err)
		}
	}
	results, err := counterOrExisting(reg, rc.results)
	if err != nil {
		return err
	}
	retries, err := counterOrExisting(reg, rc.retries)
	if err != nil {
		return err
	}
	// client-go's Register runs once per process and controller-runtime's
	// init has already used it for the request counter alone, so the
	// hooks are set directly, as Register would set them.
	clientmetrics.RequestLatency = latencyHook{rc.latency}
	clientmetrics.ResolverLatency = resolverHook{rc.resolver}
	clientmetrics.RequestSize = sizeHook{rc.requestSize}
	clientmetrics.ResponseSize = sizeHook{rc.responseSize}
	clientmetrics.RateLimiterLatency = latencyHook{rc.rateLimiter}
	clientmetrics.RequestResult = resultHook{results}
	clientmetrics.RequestRetry = retryHook{retries}
	return nil
}

// counterOrExisting registers c, or returns the counter reg already holds
// under its name and labels.
func counterOrExisting(reg prometheus.Registerer, c *prometheus.CounterVec) (*prometheus.CounterVec, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
			return existing, nil
		}
	}
	return nil, fmt.Errorf("register client-go metrics: %w", err)
}
