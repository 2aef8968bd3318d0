package app_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The command as a process: --version prints and exits 0 without needing
// anything else, and --logging-format=json logs JSON.
func TestVersionAndJSONLogging(t *testing.T) {
	bin := buildFakeCCM(t)
	out, err := exec.Command(bin, "controller-manager", "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "stratus ") {
		t.Errorf("--version: %v, %q", err, out)
	}
	out, err = exec.Command(bin, "controller-manager", "--version=raw").Output()
	if err != nil || !strings.Contains(string(out), "version.Info{") {
		t.Errorf("--version=raw: %v, %q", err, out)
	}
	cmd := exec.Command(bin, "controller-manager", "--logging-format=json", "--cloud-provider=fake-global",
		"--kubeconfig=/nonexistent/kubeconfig", "--v=2")
	out, err = cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("started without a kubeconfig:\n%s", out)
	}
	var jsonLines int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["msg"] != nil {
			jsonLines++
		}
	}
	if jsonLines == 0 {
		t.Errorf("no JSON log line with --logging-format=json:\n%s", out)
	}
	if !strings.Contains(string(out), "--kubeconfig=/nonexistent/kubeconfig") {
		t.Errorf("the error does not name the flag:\n%s", out)
	}
}
