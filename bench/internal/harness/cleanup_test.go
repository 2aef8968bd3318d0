package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// runnerDirEnv, when set, makes the test binary act as a benchmark runner
// that starts a cluster under that directory and waits to be killed.
const runnerDirEnv = "BENCH_TEST_RUNNER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(runnerDirEnv); dir != "" {
		os.Exit(actAsRunner(dir))
	}
	os.Exit(m.Run())
}

func actAsRunner(dir string) int {
	bin, err := localcluster.BinDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := StartCluster(context.Background(), bin, dir, CloudKnobs{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready", c.CloudURL)
	select {}
}

// testBinDir returns the directory with the test bed's binaries. Under
// -short the test is skipped; otherwise a missing binary fails it, naming
// the make target that builds it.
func testBinDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver, kwok and localcloud: not a -short test")
	}
	bin, err := localcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckBinaries(bin, "etcd", "kube-apiserver", "kwok", "stratus"); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestClusterDiesWithRunner starts a cluster from a child process, kills
// that process outright, and expects every process of the cluster (etcd,
// kube-apiserver, kwok, localcloud) to end with it.
func TestClusterDiesWithRunner(t *testing.T) {
	testBinDir(t)
	dir := t.TempDir()
	runner := exec.Command(os.Args[0], "-test.run=^$")
	runner.Env = append(os.Environ(), runnerDirEnv+"="+dir)
	runner.Stderr = os.Stderr
	out, err := runner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = KillLeftovers(dir) })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		_ = runner.Process.Kill()
		_ = runner.Wait()
		t.Fatalf("runner did not start its cluster: %q, %v", line, err)
	}
	before, err := Leftovers(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"etcd", "kube-apiserver", "kwok", "localcloud"} {
		if !anyCmd(before, want) {
			t.Fatalf("no %s among the runner's processes %v", want, before)
		}
	}
	if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = runner.Wait()
	left := waitGone(dir, time.Minute)
	if len(left) > 0 {
		t.Fatalf("still running after the runner was killed: %v", left)
	}
}

// TestStartClusterFailureLeavesNothing makes the last step of a cluster's
// start fail (localcloud cannot bind its VIP pool's address) and expects
// the error to name the cause and every process started before it to be
// stopped.
func TestStartClusterFailureLeavesNothing(t *testing.T) {
	bin := testBinDir(t)
	dir := t.TempDir()
	_, err := StartCluster(context.Background(), bin, dir, CloudKnobs{VIPPool: "not-a-prefix"})
	if err == nil {
		t.Fatal("StartCluster with a malformed VIP pool succeeded")
	}
	if !strings.Contains(err.Error(), "localcloud") {
		t.Fatalf("error does not name the step that failed: %v", err)
	}
	if left, _ := Leftovers(dir); len(left) > 0 {
		_, _ = KillLeftovers(dir)
		t.Fatalf("left running after a failed start: %v", left)
	}
}

func anyCmd(ps []Leftover, name string) bool {
	for _, p := range ps {
		if strings.Contains(p.Cmd, name) {
			return true
		}
	}
	return false
}

// waitGone polls until no process names dir, or timeout; it returns what
// is left.
func waitGone(dir string, timeout time.Duration) []Leftover {
	deadline := time.Now().Add(timeout)
	for {
		left, err := Leftovers(dir)
		if err == nil && len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
}
