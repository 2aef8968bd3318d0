package promtool_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnittestIsPromtools: unittest.go is the file of the Prometheus
// version in go.mod, changed only in its package clause; after a version
// bump, go generate refreshes it.
func TestUnittestIsPromtools(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/prometheus/prometheus").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/prometheus/prometheus: %v", err)
	}
	upstream, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "cmd", "promtool", "unittest.go"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile("unittest.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(ours), "\n\n")
	if !ok || !strings.HasPrefix(string(ours), "// Code generated ") {
		t.Fatal("unittest.go does not start with its generated-code header")
	}
	if want := strings.Replace(string(upstream), "\npackage main\n", "\npackage promtool\n", 1); body != want {
		t.Error("unittest.go differs from promtool's unittest.go of the Prometheus version in go.mod; run go generate ./promtool")
	}
}
