package scenario

import (
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/results"
)

func TestWindowDone(t *testing.T) {
	whole := results.SteadyRates{Ops: []results.OpCycles{{Op: "ListInstances", Whole: true}}}
	partial := results.SteadyRates{Ops: []results.OpCycles{{Op: "ListInstances", Whole: true}, {Op: "GetInstance"}}}
	for _, c := range []struct {
		name    string
		elapsed time.Duration
		r       results.SteadyRates
		want    bool
	}{
		{"whole cycles before the shortest window", 4 * time.Minute, whole, false},
		{"whole cycles after it", 6 * time.Minute, whole, true},
		{"an operation without a whole cycle", 10 * time.Minute, partial, false},
		{"the longest window closes whatever it holds", 15 * time.Minute, partial, true},
		{"no requests at all", 5 * time.Minute, results.SteadyRates{}, true},
	} {
		if got := windowDone(c.elapsed, 5*time.Minute, 15*time.Minute, c.r); got != c.want {
			t.Errorf("%s: windowDone = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSteadyGroups(t *testing.T) {
	cs := harness.Contestants()
	s := results.Settings{Nodes: 1000, IdleNodes: 5000}
	g := steadyGroups([]string{NodeInit, Steady, Steady5k}, cs, s)
	if len(g) != 2 || g[0].scenario != Steady || g[0].nodes != 1000 || len(g[0].cs) != len(cs) {
		t.Fatalf("groups %+v, want steady with every contestant first", g)
	}
	if g[1].scenario != Steady5k || g[1].nodes != 5000 || len(g[1].cs) != 2 ||
		g[1].cs[0].Name != harness.Upstream || g[1].cs[1].Name != harness.Stratus {
		t.Fatalf("steady5k group %+v, want upstream and stratus at 5000 nodes", g[1])
	}
	// Only steady5k, with contestants it does not take: nothing to run.
	if g := steadyGroups([]string{Steady5k}, cs[1:3], s); len(g) != 0 {
		t.Fatalf("groups %+v, want none", g)
	}
}

func TestBeyondBackendLimit(t *testing.T) {
	if beyondBackendLimit([]string{"a", "b"}, 2) != nil {
		t.Fatal("nodes within the limit were labelled")
	}
	got := beyondBackendLimit([]string{"a", "b", "c", "d"}, 2)
	if len(got) != 2 || got["a"] != nil || got["c"]["node.kubernetes.io/exclude-from-external-load-balancers"] != "true" || got["d"] == nil {
		t.Fatalf("labels = %v", got)
	}
}
