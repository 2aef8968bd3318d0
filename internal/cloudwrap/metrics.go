package cloudwrap

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, kept as constants so dashboards and tests agree.
const (
	MetricRequestsTotal   = "stratus_cloud_requests_total"
	MetricRequestDuration = "stratus_cloud_request_duration_seconds"
	MetricLimiterWait     = "stratus_cloud_ratelimiter_wait_seconds"
	MetricPacingRate      = "stratus_cloud_pacing_rate"
	MetricThrottledTotal  = "stratus_cloud_throttled_total"
)

type metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	limiterWait prometheus.Histogram
	rate        *prometheus.GaugeVec
	throttled   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequestsTotal,
			Help: "Calls made to the cloud provider, by operation and result.",
		}, []string{"operation", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricRequestDuration,
			Help:    "Latency of calls to the cloud provider, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"operation"}),
		limiterWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricLimiterWait,
			Help:    "Time calls waited for the client-side cloud pacing; for a provider paced per request (cloud.RequestPacer), each request.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricPacingRate,
			Help: "Current client-side limit on cloud calls per second (requests, for a provider paced per request), by operation class; 0 is no limit.",
		}, []string{"class"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricThrottledTotal,
			Help: "Cloud answers that throttled the caller (HTTP 429 and the like), by operation class.",
		}, []string{"class"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.limiterWait, m.rate, m.throttled} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("cloud metrics: %w (one instrumented cloud per registry)", err)
			}
			return nil, fmt.Errorf("cloud metrics: %w", err)
		}
	}
	return m, nil
}
