// Package results holds the benchmark's raw records, as written to
// bench/results/*.json, and the statistics the report draws from them.
package results

import (
	"slices"
	"sort"
	"time"
)

// Cloud modes: localcloud with realistic latency and rate limit, or with
// neither, so that the controllers' own cost shows.
const (
	CloudRealistic = "realistic"
	CloudIdeal     = "ideal"
)

// Results is one invocation of the benchmark runner.
type Results struct {
	Machine  Machine   `json:"machine"`
	Versions Versions  `json:"versions"`
	Settings Settings  `json:"settings"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Runs     []Run     `json:"runs"`
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs     int    `json:"cpus"`
	MemoryMB int64  `json:"memoryMiB"`
	CPUModel string `json:"cpuModel"`
	Kernel   string `json:"kernel,omitempty"`
}

// Versions of what was measured.
type Versions struct {
	Go            string `json:"go"`
	Kubernetes    string `json:"kubernetes"`
	StratusCommit string `json:"stratusCommit"`
}

// Settings are the knobs of the invocation.
type Settings struct {
	Scale       string   `json:"scale"`
	Quick       bool     `json:"quick"`
	Scenarios   []string `json:"scenarios"`
	Contestants []string `json:"contestants"`
	Reps        int      `json:"reps"`
	SteadyReps  int      `json:"steadyReps"`
	// SteadyWindow is the longest a steady window stays open; it closes
	// earlier once it holds a whole refresh cycle of every operation.
	SteadyWindow time.Duration `json:"steadyWindowNs"`
	// IdleNodes is the node count of the steady5k scenario.
	IdleNodes int `json:"idleNodes,omitempty"`
	Nodes     int `json:"nodes"`
	Services  int `json:"services"`
	// IdleServices is the Service count of the steady scenarios; 0 (a
	// results file from before it existed) means Services.
	IdleServices int           `json:"idleServices,omitempty"`
	LBNodes      int           `json:"lbNodes"`
	JoinNodes    int           `json:"joinNodes"`
	FailoverSvcs int           `json:"failoverServices"`
	KubeAPIQPS   int           `json:"kubeAPIQPS"`
	KubeAPIBurst int           `json:"kubeAPIBurst"`
	Latency      time.Duration `json:"latencyNs"`
	// IdealLatency is the ideal cloud's latency: none at the default
	// scales; the far scale keeps its realistic cloud's latency there and
	// lifts only the limits, so that a cloud far away but generous is
	// measured too.
	IdealLatency time.Duration `json:"idealLatencyNs,omitempty"`
	RateLimit    float64       `json:"rateLimit"`
	RateBurst    int           `json:"rateBurst"`
	// ProviderQPS and ProviderBurst pace the provider's requests on the
	// client side (rateLimitQPS/rateLimitBurst in the provider config),
	// the same for every contestant, in the realistic cloud only.
	ProviderQPS   float64 `json:"providerRateLimitQPS,omitempty"`
	ProviderBurst int     `json:"providerRateLimitBurst,omitempty"`
	LeaseSeconds  float64 `json:"leaseSeconds"`
	// The limit-drop scenario: LimitDropAfter after the Services are
	// created the cloud's limit drops from RateLimit to LowRateLimit for
	// LimitLowFor, then rises again; LimitDropReps repetitions.
	LimitDropReps  int           `json:"limitDropReps,omitempty"`
	LowRateLimit   float64       `json:"lowRateLimit,omitempty"`
	LimitDropAfter time.Duration `json:"limitDropAfterNs,omitempty"`
	LimitLowFor    time.Duration `json:"limitLowForNs,omitempty"`

	// FailoverNodes is the failover scenario's node count; 0 means
	// LBNodes, what it used before it had a setting of its own.
	FailoverNodes int `json:"failoverNodes,omitempty"`
}

// Run is one contestant in one scenario, once.
type Run struct {
	Scenario   string `json:"scenario"`
	Cloud      string `json:"cloud"`
	Contestant string `json:"contestant"`
	Rep        int    `json:"rep"`
	// Error is set when the run failed; its figures are then left out of
	// the statistics.
	Error string `json:"error,omitempty"`
	// Figures are the scenario's measurements by name (see the Fig*
	// constants).
	Figures map[string]float64 `json:"figures"`
	// CloudOps counts localcloud requests by operation during the
	// measured phase, the runner's own requests subtracted.
	CloudOps map[string]int64 `json:"cloudOps,omitempty"`
	// Started and Duration frame the whole run, setup included.
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"durationNs"`
	// LoadAvg is the machine's 1-minute load average when the run ended:
	// times measured under load from other work are noisier.
	LoadAvg float64 `json:"loadAvg1m,omitempty"`
}

// Figure names.
const (
	FigConverge      = "converge_s"       // time to converge (scenario's main figure)
	FigJoin          = "join_s"           // lb: time until joined nodes are in every LB
	FigCloudCalls    = "cloud_calls"      // every localcloud request in the measured phase
	FigCloudThrottle = "cloud_429"        // of which answered 429
	FigJoinUpdates   = "join_update_lb"   // lb: UpdateLoadBalancer calls after the join
	FigJoinCalls     = "join_cloud_calls" // lb: every cloud call after the join
	FigAPIRequests   = "api_requests"     // rest_client_requests_total delta
	// FigAPIWrites: the contestant's API writes over the whole phase (POST,
	// PUT, PATCH, DELETE: rest_client_requests_total by method), events
	// included.
	FigAPIWrites = "api_writes"
	// FigAPIWritesPerService (lb): the API writes (POST, PUT, PATCH,
	// DELETE, events included) made until every Service was published,
	// per Service.
	FigAPIWritesPerService = "api_writes_per_service"
	FigCPU                 = "cpu_s"             // utime+stime delta, children included
	FigPeakRSS             = "peak_rss_mib"      // VmHWM at the end
	FigRSS                 = "rss_mib"           // VmRSS at the end
	FigIdlePeakRSS         = "idle_peak_rss_mib" // steady: highest VmRSS sampled during the window only
	FigCloudPerHour        = "cloud_calls_per_h" // steady: over whole refresh cycles where the window holds one
	FigCycle               = "cycle_s"           // steady: the main operation's refresh period, pass start to pass start
	FigWindow              = "window_s"          // steady: how long the window stayed open
	FigBackUnder           = "back_under_s"      // limitdrop: drop → rate under the new limit for good
	FigLowThrottle         = "cloud_429_low"     // limitdrop: 429 answers while the limit was low
	FigLowRate             = "low_rate"          // limitdrop: requests per second sent while the limit was low
	FigAfterRaise          = "after_raise_s"     // limitdrop: limit raised again → every Service published
	FigAPIPerHour          = "api_requests_per_h"
	FigCPUPerHour          = "cpu_s_per_h"
	FigFailover            = "failover_s"    // failover: kill → all Services have ingress
	FigTakeover            = "takeover_s"    // failover: kill → standby leads
	FigDuplicates          = "duplicate_lbs" // failover: load balancers beyond one per Service
)

// Node initialization: where the time goes against the API client's floor.
// FigAPIFloor is the floor itself, 2 writes per node at the contestant's
// --kube-api-qps less what its burst lets through at once (a setting, not
// a measurement); FigFloorRatio is the time to converge over it. The
// others come from the contestant's client-go metrics over the phase:
// FigAPILimiterWait sums the seconds its requests waited in the client's
// rate limiter (rest_client_rate_limiter_duration_seconds), FigAPILatency
// is the mean request latency (rest_client_request_duration_seconds).
const (
	FigAPIFloor       = "api_floor_s"
	FigFloorRatio     = "floor_ratio"
	FigAPILimiterWait = "api_limiter_wait_s"
	FigAPILatency     = "api_latency_ms"
	// FigMachineBusy is the share of the machine's CPU time that was busy
	// during the phase, in percent: near 100, the apiserver, etcd, kwok
	// and the contestant together are what bounds the phase, not the
	// contestant's client.
	FigMachineBusy = "machine_busy_pct"
)

// FigFirstAction (failover): from the standby leading until its first load
// balancer is created.
const FigFirstAction = "first_action_s"

// Failover: the resident sets of the two replicas right before the leader
// is killed, every node initialized and a third of the Services created.
const (
	FigLeaderRSS  = "leader_rss_mib"
	FigStandbyRSS = "standby_rss_mib"
)

// Summary is the median of a figure over repetitions, with its range.
type Summary struct {
	Median, Min, Max float64
	N                int
}

// Summarize returns the median, minimum and maximum of xs (N=0 when xs is
// empty). An even count takes the mean of the two middle values.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Summary{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Key groups runs that are repetitions of one another.
type Key struct {
	Scenario, Cloud, Contestant string
}

// Group summarizes every figure of the successful runs, by key and figure.
func Group(runs []Run) map[Key]map[string]Summary {
	vals := map[Key]map[string][]float64{}
	for _, r := range runs {
		if r.Error != "" {
			continue
		}
		k := Key{r.Scenario, r.Cloud, r.Contestant}
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		for f, v := range r.Figures {
			vals[k][f] = append(vals[k][f], v)
		}
	}
	out := map[Key]map[string]Summary{}
	for k, figs := range vals {
		out[k] = map[string]Summary{}
		for f, xs := range figs {
			out[k][f] = Summarize(xs)
		}
	}
	return out
}

// Failures counts the failed runs by key.
func Failures(runs []Run) map[Key]int {
	out := map[Key]int{}
	for _, r := range runs {
		if r.Error != "" {
			out[Key{r.Scenario, r.Cloud, r.Contestant}]++
		}
	}
	return out
}

// Kept returns the runs of an earlier invocation that a new one, running
// scenarios × contestants, does not replace: those of another scenario or
// of another contestant. Limiting BENCH_SCENARIOS or BENCH_CONTESTANTS
// thereby keeps every other figure in the report and the results file.
func Kept(old []Run, scenarios, contestants []string) []Run {
	var kept []Run
	for _, r := range old {
		if !slices.Contains(scenarios, r.Scenario) || !slices.Contains(contestants, r.Contestant) {
			kept = append(kept, r)
		}
	}
	return kept
}

// Reported returns, in the order of all, the contestants the report shows:
// those running now and those with runs kept from earlier invocations.
func Reported(all, running []string, runs []Run) []string {
	var out []string
	for _, c := range all {
		if slices.Contains(running, c) || slices.ContainsFunc(runs, func(r Run) bool { return r.Contestant == c }) {
			out = append(out, c)
		}
	}
	return out
}

// SteadyServices is the Service count the steady scenarios idle with.
func (s Settings) SteadyServices() int {
	if s.IdleServices > 0 {
		return s.IdleServices
	}
	return s.Services
}
