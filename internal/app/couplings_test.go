package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Two behaviours of dependencies that Stratus relies on are nowhere
// documented. These tests fail, saying what to re-check, when an upgrade
// changes them: controller-runtime's below, client-go's elector in
// internal/app/leader.

// managerLogger (managerlog.go) rewords one error controller-runtime's
// manager logs on a clean shutdown; it matches the manager's words. If the
// manager says something else, the rewording silently stops applying and
// every clean shutdown logs an error again.
func TestCouplingControllerRuntimeStopSequenceMessages(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", "sigs.k8s.io/controller-runtime").Output()
	if err != nil {
		t.Fatalf("locate controller-runtime: %v", err)
	}
	dir, version, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	src, err := os.ReadFile(filepath.Join(dir, "pkg", "manager", "internal.go"))
	if err != nil {
		t.Fatalf("controller-runtime %s: %v; managerlog.go matches messages of its pkg/manager/internal.go", version, err)
	}
	for _, msg := range []string{crStopSequenceError, crLeaderLost} {
		if !strings.Contains(string(src), `"`+msg+`"`) {
			t.Errorf("controller-runtime %s no longer logs %q in pkg/manager: managerLogger (managerlog.go) rewords a message that "+
				"no longer exists; find what its stop sequence logs after a lease release on shutdown and match that", version, msg)
		}
	}
}
