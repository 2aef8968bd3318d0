package scenario

import (
	"testing"

	"github.com/stratus-ccm/stratus/bench/internal/config"
	"github.com/stratus-ccm/stratus/bench/internal/results"
)

func TestKnobsPaceEveryContestantOnlyInTheRealisticCloud(t *testing.T) {
	c, err := config.Load(func(string) string { return "" }, "/r")
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{S: c.S}
	r := e.knobs(results.CloudRealistic, 0)
	if r.RateLimit != 50 || r.ClientQPS != 50 || r.ClientBurst != 5 || r.Latency == 0 {
		t.Fatalf("realistic knobs = %+v", r)
	}
	i := e.knobs(results.CloudIdeal, 1)
	if i.RateLimit != 0 || i.ClientQPS != 0 || i.Latency != 0 || i.VIPPoolFrom == r.VIPPoolFrom {
		t.Fatalf("ideal knobs = %+v", i)
	}
}

func TestAPIFloor(t *testing.T) {
	for _, c := range []struct {
		n, qps, burst int
		want          float64
	}{{10000, 200, 300, 98.5}, {1000, 200, 300, 8.5}, {100, 200, 300, 0}, {1000, 0, 300, 0}} {
		if got := apiFloor(c.n, c.qps, c.burst); got != c.want {
			t.Errorf("apiFloor(%d, %d, %d) = %g, want %g", c.n, c.qps, c.burst, got, c.want)
		}
	}
}

func TestClientFigures(t *testing.T) {
	scrape := func(latSum, latCount, limSum string) clientStats {
		return readClientStats("# TYPE rest_client_request_duration_seconds histogram\n" +
			`rest_client_request_duration_seconds_sum{host="a",verb="PATCH"} ` + latSum + "\n" +
			`rest_client_request_duration_seconds_count{host="a",verb="PATCH"} ` + latCount + "\n" +
			`rest_client_request_duration_seconds_sum{host="a",verb="GET"} 1` + "\n" +
			`rest_client_request_duration_seconds_count{host="a",verb="GET"} 10` + "\n" +
			`rest_client_rate_limiter_duration_seconds_sum{host="a",verb="PATCH"} ` + limSum + "\n" +
			`rest_client_rate_limiter_duration_seconds_sum{host="a",verb="GET"} 7` + "\n")
	}
	figs := map[string]float64{}
	clientFigures(figs, scrape("2", "40", "3"), scrape("12", "140", "53"))
	if figs[results.FigAPILatency] != 100 || figs[results.FigAPILimiterWait] != 50 {
		t.Fatalf("figures = %v, want the writes' latency 100 ms and 50 s in the limiter (reads left out)", figs)
	}
	// A contestant without the histograms gets no figures, not zeros.
	none := map[string]float64{}
	clientFigures(none, clientStats{}, readClientStats("process_cpu_seconds_total 3\n"))
	if len(none) != 0 {
		t.Fatalf("figures from no histograms = %v", none)
	}
}
