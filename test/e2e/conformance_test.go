package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// conformanceSubset is the part of `make conformance` that `make test`
// runs: four of Kubernetes' own LoadBalancer specs, through
// hack/conformance/run.sh as `make conformance` runs them all: pods
// reaching an externalTrafficPolicy Local load balancer, the cleanup
// finalizer, and a load balancer with TCP and UDP on one port, which exec
// pods reach by the Service's name (the cluster DNS; about 15 s); and the
// dual-stack spec that the sandbox of real nodes alone is dual-stack (a
// node with an address of each family; no pod, under a second); and the
// load balancer without node ports, whose targets are the pod (endpoint
// targets through localcloud's route table; about 10 s).
// e2e.test v1.37 moved the [Slow] label to the end of the spec's text, so
// the focus does not depend on where the labels stand.
const conformanceSubset = `ExternalTrafficPolicy: Local \[Feature:LoadBalancer\] .*should work from pods|` +
	`\[Feature:LoadBalancer\] should handle load balancer cleanup finalizer for service|` +
	`\[sig-network\] Services should serve endpoints on same port and different protocol for internal traffic on Type LoadBalancer|` +
	`should have at least one dual-stack node|` +
	`should be able to create LoadBalancer Service without NodePort and change it`

// TestConformanceSubset runs Kubernetes' e2e.test, with the provider
// setting third-party CCMs use, against a sandbox of real nodes with
// Stratus and localcloud, and wants its report to show the subset passed.
func TestConformanceSubset(t *testing.T) {
	bin := testbed.RequireBinaries(t, "stratus", "e2e.test", "images/e2e/agnhost.tar", "images/e2e/pause.tar",
		"kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd", "images/coredns.tar")
	if os.Geteuid() != 0 {
		t.Fatal("real nodes need root (network namespaces, cgroups)")
	}
	ctx := testbed.Context(t, 20*time.Minute)
	out := t.TempDir()
	script, err := filepath.Abs(filepath.Join("..", "..", "hack", "conformance", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, script)
	cmd.Env = append(os.Environ(), "STRATUS_BIN_DIR="+bin, "CONFORMANCE_DIR="+out, "CONFORMANCE_FOCUS="+conformanceSubset)
	// The whole group stops with the test: the sandbox cleans its real
	// nodes on SIGTERM.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	output, runErr := cmd.CombinedOutput()
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatalf("no report: %v\n%s\n%s", err, output, tailFile(filepath.Join(out, "sandbox.log")))
	}
	if runErr != nil || !strings.Contains(string(report), "5 passed, 0 failed, 0 skipped of 5 selected") {
		t.Fatalf("run.sh: %v\n%s\n%s", runErr, report, tailFile(filepath.Join(out, "e2e.log")))
	}
}

func tailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return path + ":\n" + string(b)
}
