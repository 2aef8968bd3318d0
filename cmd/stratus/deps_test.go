package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The production binary links no test framework: neither the standard
// testing package nor controller-runtime's envtest (which runs a control
// plane for tests). The sandbox's control plane is pkg/localcluster.
func TestNoTestCodeInBinary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := map[string]bool{
		"testing": true,
		"sigs.k8s.io/controller-runtime/pkg/envtest": true,
		"github.com/stratus-ccm/stratus/pkg/testbed": true,
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps named %d packages; expected the binary's full dependency list", len(deps))
	}
	for _, d := range deps {
		if forbidden[d] || strings.HasPrefix(d, "sigs.k8s.io/controller-runtime/pkg/envtest/") {
			t.Errorf("the stratus binary depends on %s", d)
		}
	}
}
