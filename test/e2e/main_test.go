package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// stratusBuild is the one stratus binary the package's tests share: every
// test used to link its own, a quarter of a minute of CPU each.
var stratusBuild struct {
	dir  string
	once sync.Once
	path string
	err  error
}

// TestMain owns the shared binary's directory, removed after the tests.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stratus-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stratusBuild.dir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildStratus builds cmd/stratus on first use and returns its path; a
// failed build fails every test that asks for it.
func buildStratus(t *testing.T) string {
	t.Helper()
	stratusBuild.once.Do(func() {
		out := filepath.Join(stratusBuild.dir, "stratus")
		cmd := exec.Command("go", "build", "-o", out, "../../cmd/stratus")
		if b, err := cmd.CombinedOutput(); err != nil {
			stratusBuild.err = fmt.Errorf("build stratus: %w\n%s", err, b)
			return
		}
		stratusBuild.path = out
	})
	if stratusBuild.err != nil {
		t.Fatal(stratusBuild.err)
	}
	return stratusBuild.path
}
