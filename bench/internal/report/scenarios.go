package report

import (
	"fmt"

	"github.com/stratus-ccm/stratus/bench/internal/results"
)

// Column is one figure shown in a scenario table.
type Column struct {
	Figure string
	Title  string
	// Digits after the decimal point.
	Digits int
}

// Scenario describes how a scenario is reported.
type Scenario struct {
	Name    string
	Title   string
	Explain func(s results.Settings) string
	Columns []Column
	// Charts are the figures drawn as bar charts.
	Charts []string
	// OpsTitle heads the table of cloud requests by operation; empty for
	// "Cloud requests by operation (median)".
	OpsTitle string
}

// Scenarios are the report's sections, in order.
var Scenarios = []Scenario{
	{
		Name: "nodeinit", Title: "1. Node initialization",
		Explain: func(s results.Settings) string {
			return fmt.Sprintf("%d instances exist in localcloud; the controller manager leads; then %d Nodes register at once as kubelets with "+
				"`--cloud-provider=external` do. Time from the first registration until every node has a providerID and no uninitialized taint. "+
				"\"÷ API floor\": that time over the API client's floor, two writes per node at `--kube-api-qps` less the burst (%d nodes at %d/s, burst %d: %.1f s); "+
				"\"waited in API rate limiter\": the seconds the contestant's API writes (POST, PUT, PATCH) spent in client-go's rate limiter in all, "+
				"\"API write latency\": their mean latency (its `rest_client_*` histograms); \"machine CPU busy\": the share of the machine's CPU time busy during the phase "+
				"(/proc/stat), near 100 when kube-apiserver, etcd, kwok and the contestant together use the whole machine (empty for runs from before these were read).", s.Nodes, s.Nodes,
				s.Nodes, s.KubeAPIQPS, s.KubeAPIBurst, max(0, float64(2*s.Nodes-s.KubeAPIBurst))/float64(max(1, s.KubeAPIQPS)))
		},
		Columns: []Column{{results.FigConverge, "time to converge (s)", 1}, {results.FigFloorRatio, "÷ API floor", 2}, {results.FigCloudCalls, "cloud requests", 0}, {results.FigCloudThrottle, "of which 429", 0},
			{results.FigAPIRequests, "API server requests", 0}, {results.FigAPIWrites, "API writes", 0}, {results.FigAPILimiterWait, "waited in API rate limiter (s)", 1}, {results.FigAPILatency, "API write latency (ms, mean)", 0},
			{results.FigMachineBusy, "machine CPU busy (%)", 0}, {results.FigCPU, "CPU (s)", 1}, {results.FigPeakRSS, "peak RSS (MiB)", 0}},
		Charts: []string{results.FigConverge, results.FigCloudCalls},
	},
	{
		Name: "lb", Title: "2. Load balancers",
		Explain: func(s results.Settings) string {
			return fmt.Sprintf("%d LoadBalancer Services (one UDP port each) are created at once on %d initialized nodes; "+
				"then %d nodes join within 2 s. \"published\": time until every Service has an ingress; "+
				"\"join\": time from the first join until every load balancer's backends (read from localcloud) include every joined node. "+
				"The runner polls localcloud every 500 ms during the join; its requests are not counted. "+
				"\"API writes per Service\": the contestant's API writes (POST, PUT, PATCH, DELETE, events included; its client-go metrics) "+
				"until every Service was published, over the Services (empty for runs from before it was read).", s.Services, s.LBNodes, s.JoinNodes)
		},
		Columns: []Column{{results.FigConverge, "published (s)", 1}, {results.FigJoin, "join (s)", 1}, {results.FigJoinUpdates, "UpdateLoadBalancer after join", 0},
			{results.FigJoinCalls, "cloud requests after join", 0}, {results.FigCloudCalls, "cloud requests (total)", 0}, {results.FigCloudThrottle, "of which 429", 0},
			{results.FigAPIRequests, "API server requests", 0}, {results.FigAPIWrites, "API writes", 0}, {results.FigAPIWritesPerService, "API writes per Service (publish)", 1},
			{results.FigCPU, "CPU (s)", 1}, {results.FigPeakRSS, "peak RSS (MiB)", 0}},
		Charts: []string{results.FigJoin, results.FigConverge, results.FigJoinUpdates},
	},
	{
		Name: "steady", Title: "3. Steady state",
		Explain: func(s results.Settings) string {
			return fmt.Sprintf("%d initialized nodes and %d published Services (every load balancer holding every node, or the first 5,000 where there are more: the cloud's limit per load balancer, the rest labelled `node.kubernetes.io/exclude-from-external-load-balancers`) left idle. ", s.Nodes, s.SteadyServices()) +
				steadyMethod(s)
		},
		Columns: steadyColumns, Charts: steadyCharts, OpsTitle: steadyOpsTitle,
	},
	{
		Name: "steady5k", Title: "4. Steady state at 5,000 nodes",
		Explain: func(s results.Settings) string {
			return fmt.Sprintf("As in 3, with %d nodes: upstream at its defaults and Stratus as shipped only (the pair the targets compare), "+
				"their clusters idling beside the 1,000-node ones. ", s.IdleNodes) + steadyMethod(s)
		},
		Columns: steadyColumns, Charts: steadyCharts, OpsTitle: steadyOpsTitle,
	},
	{
		Name: "limitdrop", Title: "5. The cloud lowers its limit",
		Explain: func(s results.Settings) string {
			return fmt.Sprintf("%d LoadBalancer Services are created at once on %d initialized nodes in the realistic cloud "+
				"(every provider pacing itself to %g requests/s client-side, as in the other realistic runs). %v after the last one exists, while the contestants "+
				"create load balancers, localcloud's limit drops from %g to %g requests/s (`PUT /v1/admin/config`, as `stratus localcloud config set` does), "+
				"and %v after the drop it returns to %g. The runner reads the cloud's counters every 250 ms (admin calls, neither counted nor throttled). "+
				"\"back under\": time from the drop until the contestant's request rate (every request it sends, those answered 429 included) "+
				"stays within what the cloud's lowered limit lets through, over every 3-s window until the limit rises again: "+
				"no more requests than its token bucket passes in 3 s, the new rate (with %.0f%% for the readings' jitter) times 3 s plus its burst of %d "+
				"(a client probing upward sends a little over the rate until the burst is spent and the first 429 says so); "+
				"a contestant that never gets there shows the whole low phase, %v. \"429 while low\": 429 answers between the drop and the rise; "+
				"\"sent while low\": requests per second it sent then; \"published\": time from creating the Services until every one has an ingress "+
				"(the time to converge), \"after the rise\": from the rise until then. The contestants run side by side, each on its own cluster "+
				"and cloud, unless BENCH_STEADY_PARALLEL=0. Repetitions: %d.",
				s.Services, s.LBNodes, s.ProviderQPS, s.LimitDropAfter, s.RateLimit, s.LowRateLimit, s.LimitLowFor, s.RateLimit,
				(results.UnderTolerance-1)*100, s.RateBurst, s.LimitLowFor, s.LimitDropReps)
		},
		Columns: []Column{{results.FigBackUnder, "back under (s)", 1}, {results.FigLowThrottle, "429 while low", 0}, {results.FigCloudThrottle, "429 in all", 0},
			{results.FigLowRate, "sent while low (requests/s)", 1}, {results.FigConverge, "published (s)", 1}, {results.FigAfterRaise, "after the rise (s)", 1},
			{results.FigCloudCalls, "cloud requests", 0}, {results.FigCPU, "CPU (s)", 1}, {results.FigPeakRSS, "peak RSS (MiB)", 0}},
		Charts: []string{results.FigBackUnder, results.FigCloudThrottle},
	},
	{
		Name: "failover", Title: "6. Failover",
		Explain: func(s results.Settings) string {
			nodes := s.FailoverNodes
			if nodes == 0 {
				nodes = s.LBNodes
			}
			return fmt.Sprintf("Two replicas with leader election (lease %gs) on %d initialized nodes; %d Services are created one every 100 ms and the leader is SIGKILLed "+
				"after a third of them. Takeover: kill until the standby holds the lease (the Lease's acquireTime); first action: from then until "+
				"the standby creates its first load balancer (the cloud's record); failover: kill until every Service has an ingress. "+
				"Leader and standby RSS: both replicas' resident sets right before the kill; requests, CPU and peak RSS are the standby's over the whole run.", s.LeaseSeconds, nodes, s.FailoverSvcs)
		},
		Columns: []Column{{results.FigTakeover, "takeover (s)", 1}, {results.FigFirstAction, "first action (s)", 2}, {results.FigFailover, "failover (s)", 1}, {results.FigDuplicates, "duplicate LBs", 0},
			{results.FigCloudCalls, "cloud requests", 0}, {results.FigAPIRequests, "API server requests", 0}, {results.FigAPIWrites, "API writes", 0}, {results.FigCPU, "CPU (s)", 1}, {results.FigLeaderRSS, "leader RSS (MiB)", 0}, {results.FigStandbyRSS, "standby RSS (MiB)", 0},
			{results.FigPeakRSS, "peak RSS (MiB)", 0}},
		Charts: []string{results.FigFailover},
	},
}

var steadyColumns = []Column{{results.FigCloudPerHour, "cloud requests / h", 0}, {results.FigAPIPerHour, "API server requests / h", 0},
	{results.FigCPUPerHour, "CPU s / h", 1}, {results.FigIdlePeakRSS, "idle peak RSS (MiB)", 0}, {results.FigPeakRSS, "peak RSS (whole run, MiB)", 0},
	{results.FigRSS, "RSS at the end (MiB)", 0}, {results.FigCycle, "refresh cycle (s)", 0}, {results.FigWindow, "window (s)", 0}}

var steadyCharts = []string{results.FigCloudPerHour, results.FigCPUPerHour, results.FigIdlePeakRSS}

const steadyOpsTitle = "Cloud requests per hour by operation (median; over whole cycles where the window held one)"

// steadyMethod explains how a steady window is measured.
func steadyMethod(s results.Settings) string {
	return fmt.Sprintf("The contestants idle side by side, each on its own cluster, unless BENCH_STEADY_PARALLEL=0. "+
		"After 30 s of settling, the runner reads the cloud's request counters by operation, the contestant's CPU time and its resident set every second. "+
		"Both contestants pause 5 minutes after each node refresh pass ends, so a refresh cycle is 5 minutes plus the pass, which at 5,000 nodes takes minutes: "+
		"a fixed window × (1 h / window) counts a pass that straddles its end partly or not at all. "+
		"Instead, the window stays open until it holds a whole cycle of every operation the contestant sends (at least 5 minutes, at most %v): "+
		"a pass is a run of requests of one operation less than %v apart, and a whole cycle runs from one pass start to a later one, or from one pass end to a later one, "+
		"so that it holds each pass and each pause once whatever the window's phase. "+
		"\"cloud requests / h\" sums each operation's requests over its whole cycles, per hour (an operation without a whole cycle in the longest window is extrapolated from the window); "+
		"\"CPU s / h\" is measured over the whole cycles of the busiest operation (the node refresh), the window when it has none; "+
		"\"API server requests / h\" over the window (lease renewals and watches, even over time). "+
		"\"refresh cycle\": the busiest operation's period (\"–\" without a whole cycle); \"window\": how long it stayed open. "+
		"\"idle peak RSS\" is the highest resident set sampled during the window only; \"peak RSS (whole run)\" is the high-water mark since start, setup included; "+
		"\"RSS at the end\" is the resident set when the window closes.",
		s.SteadyWindow, results.CycleGap)
}
