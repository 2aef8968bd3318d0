package app_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPath is a repository path as docs/architecture.md names one: in
// backticks, under internal/, pkg/, cmd/ or test/, possibly with a '*'.
var docPath = regexp.MustCompile("`((?:internal|pkg|cmd|test)/[A-Za-z0-9_./*-]+)")

// TestArchitectureDocNamesExistingPaths fails for a package or file path in
// docs/architecture.md that does not exist, so the layout it draws follows
// the tree when code moves.
func TestArchitectureDocNamesExistingPaths(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range docPath.FindAllStringSubmatch(string(doc), -1) {
		p := strings.TrimRight(m[1], ".")
		if seen[p] {
			continue
		}
		seen[p] = true
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil || len(matches) == 0 {
			t.Errorf("docs/architecture.md names %s, which does not exist", p)
		}
	}
	if len(seen) < 20 {
		t.Fatalf("found only %d paths in docs/architecture.md; the pattern no longer matches how it names them", len(seen))
	}
}
