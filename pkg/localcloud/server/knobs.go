package server

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// knobs holds the realism settings and the rate limiter they configure.
type knobs struct {
	// patchMu orders read-modify-save-set sequences, so that two
	// concurrent changes cannot save one result and apply the other.
	patchMu sync.Mutex
	mu      sync.RWMutex
	k       api.Knobs
	limiter *rate.Limiter
}

func newKnobs(k api.Knobs) *knobs {
	n := &knobs{}
	n.set(k)
	return n
}

func (n *knobs) get() api.Knobs {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.k
}

func (n *knobs) set(k api.Knobs) {
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := n.k.RateLimit != k.RateLimit || n.k.RateBurst != k.RateBurst
	n.k = k
	if changed || n.limiter == nil {
		// A new limiter starts with a full bucket, as a fresh API quota does.
		n.limiter = rate.NewLimiter(rate.Limit(k.RateLimit), k.RateBurst)
	}
}

// patch applies p atomically: invalid results are rejected whole, and the
// result takes effect only once save has kept it.
func (n *knobs) patch(p api.KnobsPatch, save func(api.Knobs) error) (api.Knobs, error) {
	n.patchMu.Lock()
	defer n.patchMu.Unlock()
	next := n.get().Apply(p)
	if err := next.Validate(); err != nil {
		return api.Knobs{}, err
	}
	if err := save(next); err != nil {
		return api.Knobs{}, err
	}
	n.set(next)
	return next, nil
}

// admit applies the rate limit: it returns how long the caller should wait
// before retrying, or 0 when the request may proceed.
func (n *knobs) admit() time.Duration {
	n.mu.RLock()
	lim := n.limiter
	off := n.k.RateLimit == 0
	n.mu.RUnlock()
	if off {
		return 0
	}
	r := lim.Reserve()
	if !r.OK() {
		return time.Second
	}
	if d := r.Delay(); d > 0 {
		// Give the token back: a refused request must not consume capacity.
		r.Cancel()
		return d
	}
	return 0
}

// delay sleeps for the configured latency, or until ctx ends.
func (n *knobs) delay(ctx context.Context) {
	d := time.Duration(n.get().Latency)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// fault reports whether this request is answered with an injected error.
func (n *knobs) fault() bool {
	r := n.get().ErrorRate
	return r > 0 && rand.Float64() < r
}

// retryAfterSeconds rounds up, never below 1, as Retry-After is in whole seconds.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// stats counts authenticated API requests by operation and status code.
type stats struct {
	mu       sync.Mutex
	since    time.Time
	counts   map[string]map[int]int64
	registry *prometheus.Registry
	requests *prometheus.CounterVec
}

func newStats() *stats {
	s := &stats{
		since:    time.Now().UTC(),
		counts:   map[string]map[int]int64{},
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "localcloud_api_requests_total",
			Help: "Authenticated localcloud API requests by operation and HTTP status code.",
		}, []string{"operation", "code"}),
	}
	s.registry.MustRegister(s.requests)
	return s
}

func (s *stats) inc(op string, code int) {
	s.mu.Lock()
	m := s.counts[op]
	if m == nil {
		m = map[int]int64{}
		s.counts[op] = m
	}
	m[code]++
	s.mu.Unlock()
	s.requests.WithLabelValues(op, strconv.Itoa(code)).Inc()
}

func (s *stats) snapshot() api.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := api.Stats{Since: s.since, Operations: map[string]api.OperationStats{}}
	for op, m := range s.counts {
		os := api.OperationStats{ByCode: map[string]int64{}}
		for code, n := range m {
			os.ByCode[strconv.Itoa(code)] = n
			os.Total += n
		}
		out.Operations[op] = os
		out.Total += os.Total
	}
	return out
}

// reset clears the JSON counters; the Prometheus counters stay monotonic
// as Prometheus expects.
func (s *stats) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = map[string]map[int]int64{}
	s.since = time.Now().UTC()
}
