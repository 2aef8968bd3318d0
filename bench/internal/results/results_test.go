package results

import "testing"

func TestSummarizeOdd(t *testing.T) {
	got := Summarize([]float64{5, 1, 3})
	want := Summary{Median: 3, Min: 1, Max: 5, N: 3}
	if got != want {
		t.Fatalf("Summarize = %+v, want %+v", got, want)
	}
}

func TestSummarizeEvenTakesMiddleMean(t *testing.T) {
	got := Summarize([]float64{4, 1, 2, 10})
	want := Summary{Median: 3, Min: 1, Max: 10, N: 4}
	if got != want {
		t.Fatalf("Summarize = %+v, want %+v", got, want)
	}
}

func TestSummarizeEmptyAndSingle(t *testing.T) {
	if got := Summarize(nil); got.N != 0 {
		t.Fatalf("Summarize(nil) = %+v, want N=0", got)
	}
	if got := Summarize([]float64{7}); got != (Summary{7, 7, 7, 1}) {
		t.Fatalf("Summarize([7]) = %+v", got)
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Fatalf("input reordered: %v", in)
	}
}

func TestGroupSkipsFailedRuns(t *testing.T) {
	runs := []Run{
		{Scenario: "nodeinit", Cloud: CloudIdeal, Contestant: "a", Figures: map[string]float64{FigConverge: 2}},
		{Scenario: "nodeinit", Cloud: CloudIdeal, Contestant: "a", Figures: map[string]float64{FigConverge: 4}},
		{Scenario: "nodeinit", Cloud: CloudIdeal, Contestant: "a", Error: "boom", Figures: map[string]float64{FigConverge: 100}},
		{Scenario: "nodeinit", Cloud: CloudIdeal, Contestant: "b", Figures: map[string]float64{FigConverge: 9}},
	}
	g := Group(runs)
	a := g[Key{"nodeinit", CloudIdeal, "a"}][FigConverge]
	if a.Median != 3 || a.Max != 4 || a.N != 2 {
		t.Fatalf("a = %+v, want median 3 max 4 from 2 runs", a)
	}
	if b := g[Key{"nodeinit", CloudIdeal, "b"}][FigConverge]; b.Median != 9 {
		t.Fatalf("b = %+v", b)
	}
	if f := Failures(runs)[Key{"nodeinit", CloudIdeal, "a"}]; f != 1 {
		t.Fatalf("failures = %d, want 1", f)
	}
}

func TestKeptKeepsOtherScenariosAndOtherContestants(t *testing.T) {
	old := []Run{
		{Scenario: "nodeinit", Contestant: "upstream", Figures: map[string]float64{FigConverge: 40}},
		{Scenario: "nodeinit", Contestant: "stratus", Figures: map[string]float64{FigConverge: 5}},
		{Scenario: "steady", Contestant: "upstream", Figures: map[string]float64{FigCPUPerHour: 11}},
		{Scenario: "steady", Contestant: "stratus", Figures: map[string]float64{FigCPUPerHour: 15}},
	}
	// Re-running nodeinit for stratus alone replaces only that run.
	got := Kept(old, []string{"nodeinit"}, []string{"stratus"})
	want := []Run{old[0], old[2], old[3]}
	if len(got) != len(want) {
		t.Fatalf("kept %d runs (%+v), want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].Scenario != want[i].Scenario || got[i].Contestant != want[i].Contestant {
			t.Errorf("kept[%d] = %s/%s, want %s/%s", i, got[i].Scenario, got[i].Contestant, want[i].Scenario, want[i].Contestant)
		}
	}
	if n := len(Kept(old, []string{"nodeinit", "steady"}, []string{"upstream", "stratus"})); n != 0 {
		t.Errorf("a full re-run kept %d old runs, want 0", n)
	}
}

func TestReportedIncludesContestantsWithKeptRuns(t *testing.T) {
	all := []string{"upstream", "upstream-tuned", "stratus-std", "stratus"}
	runs := []Run{{Scenario: "nodeinit", Contestant: "upstream"}, {Scenario: "lb", Contestant: "stratus-std"}}
	got := Reported(all, []string{"stratus"}, runs)
	want := []string{"upstream", "stratus-std", "stratus"}
	if len(got) != len(want) {
		t.Fatalf("Reported = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Reported = %v, want %v", got, want)
		}
	}
}
