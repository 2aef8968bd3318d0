package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is a running control plane.
type Env struct {
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// Clientset is a typed client for Config.
	Clientset kubernetes.Interface
	// Kubeconfig is the path of a kubeconfig file for Config, for processes
	// the test starts (the stratus binary, kwok, kubectl).
	Kubeconfig string
	// BinDir is where the control plane binaries came from.
	BinDir string

	env *envtest.Environment
}

// RequireBinaries fails t unless every named binary is in BinDir. Under
// -short (the unit run) it skips t instead, naming what it needs.
func RequireBinaries(t testing.TB, names ...string) string {
	t.Helper()
	if testing.Short() {
		// -short is the unit run: it needs no test bed, and says what it
		// left out. Without -short a missing binary fails below.
		t.Skipf("testbed: integration test, needs %s from `make tools`; -short runs unit tests only", strings.Join(names, ", "))
	}
	dir, err := localcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("testbed: %s is missing from %s; build it with `make tools`", n, dir)
		}
	}
	return dir
}

// Option adjusts the control plane before it starts; workDir is the
// directory StartEnv was given, for files the option writes.
type Option func(env *envtest.Environment, workDir string) error

// auditPolicy logs every request at the Metadata level (who, what verb on
// which object, the answer's code) once its response is complete, or
// started for a watch.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// WithAuditLog makes kube-apiserver write an audit event for every request
// to path, one JSON object a line (audit.k8s.io/v1 Event), synchronously:
// a request answered is already in the file.
func WithAuditLog(path string) Option {
	return func(env *envtest.Environment, workDir string) error {
		policy := filepath.Join(workDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return fmt.Errorf("testbed: audit policy: %w", err)
		}
		env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policy).
			Set("audit-log-path", path).
			Set("audit-log-format", "json").
			Set("audit-log-mode", "blocking")
		return nil
	}
}

// Start starts etcd and kube-apiserver and stops them when t ends.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	e, err := StartEnv(RequireBinaries(t, "kube-apiserver", "etcd"), t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("testbed: stop: %v", err)
		}
	})
	return e
}

// StartEnv starts a control plane from the binaries in binDir and writes an
// admin kubeconfig into workDir. Callers must Stop it.
func StartEnv(binDir, workDir string, opts ...Option) (*Env, error) {
	env := &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	for _, o := range opts {
		if err := o(env, workDir); err != nil {
			return nil, err
		}
	}
	// envtest resolves kubectl next to the other binaries; the system one
	// is just as good and the project does not build its own.
	if _, err := os.Stat(filepath.Join(binDir, "kubectl")); err != nil {
		if p, err := exec.LookPath("kubectl"); err == nil {
			env.ControlPlane.KubectlPath = p
		}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("testbed: start control plane: %w", err)
	}
	e := &Env{Config: cfg, env: env, BinDir: binDir}
	if e.Clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("testbed: clientset: %w", err)
	}
	e.Kubeconfig = filepath.Join(workDir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, e.Kubeconfig); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return e, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("testbed: stop control plane: %w", err)
	}
	return nil
}

// Context returns a context that ends when t ends or after d.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// StartKwok runs kwok against the env until t ends.
func (e *Env) StartKwok(t testing.TB) *localcluster.Kwok {
	t.Helper()
	RequireBinaries(t, "kwok")
	dir := t.TempDir()
	k, err := localcluster.StartKwok(context.Background(), filepath.Join(e.BinDir, "kwok"), e.Kubeconfig, dir, filepath.Join(dir, "kwok.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Stop() })
	return k
}
