package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The env file, sourced by a shell, puts the sandbox's stratus first on the
// PATH (the docs' `stratus localcloud ...` then works as written) and
// exports what the docs use.
func TestEnvFileAsSourcedByAShell(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "with space")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(bin, "stratus")
	if err := os.WriteFile(self, []byte("#!/bin/sh\necho the sandbox stratus \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.CCMPort, o.LocalcloudPort = 20258, 28787
	s := &sandbox{o: o, self: self, state: t.TempDir(), lcToken: "lc-token", metricsToken: "m-token",
		ccmFlags: []string{"--cloud-provider=localcloud", "--secure-port=20258"}}
	if err := s.writeEnv(); err != nil {
		t.Fatal(err)
	}
	script := `. "$1" && stratus localcloud routes list && echo "$LOCALCLOUD_CLUSTER|$LOCALCLOUD_URL|$STRATUS_CCM_URL|$STRATUS_METRICS_URL|$STRATUS_CCM_FLAGS"`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", filepath.Join(s.state, "env"))
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sourcing the env file: %v\n%s", err, out)
	}
	want := "the sandbox stratus localcloud routes list\n" +
		"sandbox|http://127.0.0.1:28787|https://127.0.0.1:20258|https://127.0.0.1:20258/metrics|--cloud-provider=localcloud --secure-port=20258\n"
	if string(out) != want {
		t.Fatalf("after sourcing the env file:\n%s\nwant:\n%s", out, want)
	}
}
