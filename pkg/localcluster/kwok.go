package localcluster

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// KwokStages is the project's kwok stage file (see kwok-stages.yaml).
//
//go:embed kwok-stages.yaml
var KwokStages []byte

// Kwok is a running kwok process.
type Kwok struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// KwokArgs returns kwok's command line for a kubeconfig and a stage file:
// it manages only nodes carrying KwokAnnotation=fake, serves no kubelet API
// on a fixed port, and renews node Leases.
func KwokArgs(kubeconfig, stagesFile string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + stagesFile,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokAnnotation + "=fake",
		"--server-address=127.0.0.1:0",
		"--node-lease-duration-seconds=40",
	}
}

// StartKwok starts kwok with the project's stages written into
// workDir, its output going to logFile. extraArgs follow KwokArgs, so a
// flag given there again (such as --node-lease-duration-seconds) wins.
func StartKwok(ctx context.Context, binary, kubeconfig, workDir, logFile string, extraArgs ...string) (*Kwok, error) {
	stages := filepath.Join(workDir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, KwokStages, 0o600); err != nil {
		return nil, fmt.Errorf("write kwok stages: %w", err)
	}
	out, err := os.Create(logFile)
	if err != nil {
		return nil, fmt.Errorf("kwok log: %w", err)
	}
	cmd := exec.CommandContext(ctx, binary, append(KwokArgs(kubeconfig, stages), extraArgs...)...)
	cmd.Stdout, cmd.Stderr = out, out
	// Pdeathsig: kwok dies with whatever started it (a sandbox, a test
	// binary, the benchmark runner), also when that is killed outright.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	k := &Kwok{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = out.Close(); close(k.done) }()
	return k, nil
}

// Stop ends kwok: SIGTERM, then SIGKILL after a grace period.
func (k *Kwok) Stop() {
	if k.cmd.Process == nil {
		return
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
}
