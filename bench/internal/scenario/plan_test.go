package scenario

import (
	"slices"
	"testing"
)

func TestRotate(t *testing.T) {
	xs := []string{"a", "b", "c"}
	for k, want := range [][]string{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}, {"a", "b", "c"}, {"b", "c", "a"}} {
		if got := rotate(xs, k); !slices.Equal(got, want) {
			t.Errorf("rotate(%v, %d) = %v, want %v", xs, k, got, want)
		}
	}
	if !slices.Equal(xs, []string{"a", "b", "c"}) {
		t.Errorf("rotate changed its input: %v", xs)
	}
	if got := rotate([]string(nil), 3); len(got) != 0 {
		t.Errorf("rotate(nil) = %v", got)
	}
}

// TestRotateEveryContestantLeads checks the plan's use: over as many
// consecutive rounds as there are contestants, each runs first once.
func TestRotateEveryContestantLeads(t *testing.T) {
	cs := []string{"upstream", "upstream-tuned", "stratus-std", "stratus"}
	first := map[string]int{}
	for round := range len(cs) {
		first[rotate(cs, round)[0]]++
	}
	for _, c := range cs {
		if first[c] != 1 {
			t.Errorf("%s ran first %d times in %d rounds, want once", c, first[c], len(cs))
		}
	}
}
