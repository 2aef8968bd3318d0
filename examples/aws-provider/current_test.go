package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// awsModule is the provider module whose newest version must link.
const awsModule = "k8s.io/cloud-provider-aws"

// TestNewestAWSProviderLinks fails when the newest version of AWS'
// provider the Go module proxy serves no longer links into Stratus, so
// that the next Kubernetes minor (which providers follow) is noticed by
// this test and not by a vendor. It copies this module into a temporary
// directory, points its replace at this checkout, moves it to the newest
// k8s.io/cloud-provider-aws and builds it. When the newest version is the
// one this module pins, the copy is built as it is, from the build cache
// the test binary's own build filled.
func TestNewestAWSProviderLinks(t *testing.T) {
	if testing.Short() {
		t.Skipf("asks the Go module proxy for the newest %s and builds this module with it; -short runs unit tests only", awsModule)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	env := goEnv(t, ctx)

	pinned := goOutput(t, ctx, ".", env, "list", "-m", "-f", "{{.Version}}", awsModule)
	newest := goOutput(t, ctx, ".", env, "list", "-m", "-f", "{{.Version}}", awsModule+"@latest")
	t.Logf("%s: this module pins %s, the Go module proxy's newest is %s", awsModule, pinned, newest)

	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(".")); err != nil {
		t.Fatalf("copy the module: %v", err)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	goOutput(t, ctx, dir, env, "mod", "edit", "-replace=github.com/stratus-ccm/stratus="+repo)
	if newest != pinned {
		goOutput(t, ctx, dir, env, "get", awsModule+"@"+newest)
	}
	args := []string{"build"}
	if raceEnabled {
		// The test binary's dependencies were compiled with -race: the
		// same flags find them in the build cache.
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./...")...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s, the newest version the Go module proxy serves, no longer links into Stratus (this module pins %s): go build: %v\n%s",
			awsModule, newest, pinned, err, out)
	}
	if newest != pinned {
		t.Logf("%s %s links into Stratus; this module still pins %s", awsModule, newest, pinned)
	}
}

// goEnv is the environment of the go commands the test runs: modules
// resolved from the proxy and go.mod updated as needed, whatever -mod the
// caller's GOFLAGS set, and no workspace. A vendored or offline build
// cannot fetch the newest version: the test says so and skips.
func goEnv(t *testing.T, ctx context.Context) []string {
	t.Helper()
	if proxy := goOutput(t, ctx, ".", os.Environ(), "env", "GOPROXY"); proxy == "off" {
		t.Skipf("GOPROXY=off: the newest %s cannot be fetched", awsModule)
	}
	var flags []string
	for _, f := range strings.Fields(goOutput(t, ctx, ".", os.Environ(), "env", "GOFLAGS")) {
		switch {
		case f == "-mod=vendor":
			t.Skipf("GOFLAGS has -mod=vendor: the newest %s cannot be fetched", awsModule)
		case strings.HasPrefix(f, "-mod="):
		default:
			flags = append(flags, f)
		}
	}
	return append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.Join(append(flags, "-mod=mod"), " "))
}

// goOutput runs the go command in dir and returns its trimmed standard
// output; it fails the test with the command's output when it fails.
func goOutput(t *testing.T, ctx context.Context, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}
