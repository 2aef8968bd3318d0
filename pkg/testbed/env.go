package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

// BinDir returns the directory holding kube-apiserver, etcd and kwok:
// $STRATUS_BIN_DIR, or bin/ at the root of the module.
func BinDir() (string, error) {
	if d := os.Getenv("STRATUS_BIN_DIR"); d != "" {
		return filepath.Abs(d)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hack", "tools")); err == nil {
				return filepath.Join(dir, "bin"), nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testbed: cannot find the repository root (no go.mod with hack/tools above the working directory); set STRATUS_BIN_DIR")
		}
		dir = parent
	}
}

// RequireBinaries fails t unless every named binary is in BinDir.
func RequireBinaries(t testing.TB, names ...string) string {
	t.Helper()
	dir, err := BinDir()
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

// Start starts etcd and kube-apiserver and stops them when t ends.
func Start(t testing.TB) *Env {
	t.Helper()
	e, err := StartEnv(RequireBinaries(t, "kube-apiserver", "etcd"), t.TempDir())
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
func StartEnv(binDir, workDir string) (*Env, error) {
	env := &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	// envtest resolves kubectl next to the other binaries; the system one
	// is just as good and the project does not build its own.
	if _, err := os.Stat(filepath.Join(binDir, "kubectl")); err != nil {
		if p, err := lookPath("kubectl"); err == nil {
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
	if err := WriteKubeconfig(cfg, e.Kubeconfig); err != nil {
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

// WriteKubeconfig writes cfg (certificate or token based) as a kubeconfig.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("testbed: write kubeconfig %s: %w", path, err)
	}
	return nil
}

// Context returns a context that ends when t ends or after d.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
