package app

import (
	"os/exec"
	"strings"
	"testing"
)

// The composition root knows no provider: a provider reaches the daemon
// through the registry main fills, and what the controllers need to know
// about a provider's errors (quota, throttling) is expressed in pkg/cloud.
func TestImportsNoProvider(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps named %d packages; expected the package's full dependency list", len(deps))
	}
	const module = "github.com/stratus-ccm/stratus/"
	for _, d := range deps {
		if strings.HasPrefix(d, module+"pkg/providers/") || strings.HasPrefix(d, module+"pkg/localcloud") {
			t.Errorf("internal/app depends on %s", d)
		}
	}
}
