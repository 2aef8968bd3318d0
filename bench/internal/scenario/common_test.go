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
