package vendors_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// workloadNamespace is where every vendor manifest runs its controller
// manager, and so where its Secrets are.
const workloadNamespace = "kube-system"

// pod is what the kubelet gives a vendor's container, for a process
// started outside one.
type pod struct {
	// args are the container's, $(VAR) expanded, with --cloud-config
	// pointing into the materialized Secret volume and a --kubeconfig
	// holding the ServiceAccount's token.
	args []string
	// env is the container's environment: its env entries, Secrets
	// resolved, and the in-cluster API variables the kubelet sets.
	env map[string]string
}

// createSecrets creates the Secrets an operator creates before applying a
// vendor's manifest (its token, its cloud config), by name and key.
func createSecrets(ctx context.Context, t *testing.T, env *testbed.Env, secrets map[string]map[string]string) {
	t.Helper()
	for name, data := range secrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: workloadNamespace}, StringData: data}
		if _, err := env.Clientset.CoreV1().Secrets(workloadNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// podFor resolves ctr's env as the kubelet does (a missing key of a
// Secret is an error unless optional, as the kubelet refuses to start the
// container), expands args with it and gives them what a pod has from its
// node.
func podFor(ctx context.Context, t *testing.T, env *testbed.Env, ctr container, args []string) pod {
	t.Helper()
	vars := map[string]string{}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok := secretKey(ctx, t, env, ref.Name, ref.Key)
			if !ok && (ref.Optional == nil || !*ref.Optional) {
				t.Fatalf("env %s: Secret %s/%s has no key %q, and the reference is not optional", e.Name, workloadNamespace, ref.Name, ref.Key)
			}
			if ok {
				vars[e.Name] = v
			}
		default:
			t.Fatalf("env %s: only values and Secret keys are supported", e.Name)
		}
	}
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	vars["KUBERNETES_SERVICE_HOST"], vars["KUBERNETES_SERVICE_PORT"] = u.Hostname(), u.Port()
	out := expand(t, args, vars)
	return pod{args: podEnvironment(ctx, t, env, ctr, out), env: vars}
}

// secretKey reads one key of a Secret in the workload's namespace.
func secretKey(ctx context.Context, t *testing.T, env *testbed.Env, name, key string) (string, bool) {
	t.Helper()
	s, err := env.Clientset.CoreV1().Secrets(workloadNamespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	v, ok := s.Data[key]
	return string(v), ok
}

// podEnvironment gives args what a pod has from its node: --cloud-config
// pointing at the file of the Secret volume mounted there, and a
// kubeconfig holding the ServiceAccount's token for the in-cluster config.
func podEnvironment(ctx context.Context, t *testing.T, env *testbed.Env, ctr container, args []string) []string {
	t.Helper()
	dir := t.TempDir()
	for i, a := range args {
		path, ok := strings.CutPrefix(a, "--cloud-config=")
		if !ok {
			continue
		}
		data, found := mountedFile(ctx, t, env, ctr, path)
		if !found {
			t.Fatalf("--cloud-config=%s: no Secret volume of the manifest holds it", path)
		}
		file := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		args[i] = "--cloud-config=" + file
	}
	cfg, err := localcluster.ServiceAccountConfig(ctx, env.Config, workloadNamespace, ctr.ServiceAccountName, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return append(args, "--kubeconfig="+kubeconfig)
}

// mountedFile reads the file at path in the container, from the Secret
// volume mounted above it.
func mountedFile(ctx context.Context, t *testing.T, env *testbed.Env, ctr container, path string) (string, bool) {
	t.Helper()
	for _, v := range ctr.SecretVolumes {
		key, ok := strings.CutPrefix(path, strings.TrimSuffix(v.MountPath, "/")+"/")
		if ok {
			return secretKey(ctx, t, env, v.SecretName, key)
		}
	}
	return "", false
}

// setProcessEnv sets the environment the next process started inherits,
// until the test ends.
func setProcessEnv(t *testing.T, vars map[string]string) {
	t.Helper()
	for k, v := range vars {
		t.Setenv(k, v)
	}
}
