package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplaceSectionKeepsTextOutsideMarkers(t *testing.T) {
	doc := "# Title\n\nhand text before\n" + BeginMarker + "\nold generated\nlines\n" + EndMarker + "\n\n## Why\nhuman reasons\n"
	got, err := ReplaceSection(doc, "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\nhand text before\n" + BeginMarker + "\nnew table\n" + EndMarker + "\n\n## Why\nhuman reasons\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestReplaceSectionIsIdempotent(t *testing.T) {
	doc := NewDocument()
	once, err := ReplaceSection(doc, "section A")
	if err != nil {
		t.Fatal(err)
	}
	twice, err := ReplaceSection(once, "section A")
	if err != nil {
		t.Fatal(err)
	}
	if once != twice {
		t.Fatalf("second update changed the document:\n%s\n---\n%s", once, twice)
	}
}

func TestReplaceSectionAppendsMarkersWhenAbsent(t *testing.T) {
	got, err := ReplaceSection("# Hand written\n\nkeep me", "gen")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "# Hand written\n\nkeep me\n\n"+BeginMarker+"\ngen\n"+EndMarker) {
		t.Fatalf("unexpected document:\n%s", got)
	}
}

func TestReplaceSectionRejectsBrokenMarkers(t *testing.T) {
	for name, doc := range map[string]string{
		"end only":     "x\n" + EndMarker + "\n",
		"begin only":   BeginMarker + "\nx\n",
		"reversed":     EndMarker + "\n" + BeginMarker + "\n",
		"two sections": BeginMarker + EndMarker + BeginMarker + EndMarker,
	} {
		if _, err := ReplaceSection(doc, "gen"); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestUpdateFileCreatesAndPreserves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs", "benchmarks.md")
	if err := UpdateFile(path, "first"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	edited := strings.Replace(string(b), "say why here.", "say why here.\nThe cloud was slow.", 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := UpdateFile(path, "second"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	s := string(b)
	if !strings.Contains(s, "The cloud was slow.") || !strings.Contains(s, BeginMarker+"\nsecond\n"+EndMarker) || strings.Contains(s, "first") {
		t.Fatalf("unexpected document:\n%s", s)
	}
}

func TestNiceCeilRoundsUpToRoundAxisEnds(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{25.3, 30}, {37.7, 40}, {13800, 15000}, {1, 1}, {0.23, 0.25}, {0, 0}} {
		if got := niceCeil(c.in); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// A scale's section lives between markers of its own: replacing it keeps
// the default section, and the default's replacement keeps it.
func TestNamedSectionsAreIndependent(t *testing.T) {
	doc := "# T\n" + BeginMarker + "\ndefault figures\n" + EndMarker + "\n"
	withX, err := ReplaceNamedSection(doc, "xlarge", "10k figures")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(withX, "default figures") || !strings.Contains(withX, "<!-- BEGIN make bench xlarge -->\n10k figures\n<!-- END make bench xlarge -->") {
		t.Fatalf("after the xlarge section:\n%s", withX)
	}
	again, err := ReplaceSection(withX, "new default")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(again, "10k figures") || !strings.Contains(again, BeginMarker+"\nnew default\n"+EndMarker) || strings.Contains(again, "default figures") {
		t.Fatalf("after the default section:\n%s", again)
	}
}
