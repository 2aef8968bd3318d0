package localcluster_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// The control plane serves an admin, authorizes everyone else by RBAC,
// keeps etcd's data across a restart and leaves no process behind.
func TestControlPlane(t *testing.T) {
	bin := testbed.RequireBinaries(t, "etcd", "kube-apiserver")
	ctx := testbed.Context(t, 4*time.Minute)
	dir := t.TempDir()
	p := &localcluster.ControlPlane{BinDir: bin, EtcdDataDir: filepath.Join(dir, "etcd"), CertDir: filepath.Join(dir, "pki")}
	admin := start(ctx, t, p)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, namespace("kept"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin cannot create a namespace: %v", err)
	}

	cfg, err := p.UserConfig("someone", "some-group")
	if err != nil {
		t.Fatal(err)
	}
	user := kubernetes.NewForConfigOrDie(cfg)
	_, err = user.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("a user without RBAC bindings listing namespaces: err = %v, want Forbidden", err)
	}

	pids := p.Pids()
	p.Stop()
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("process %d still runs after Stop", pid)
		}
	}

	admin = start(ctx, t, p)
	if _, err := admin.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace lost across a restart: %v", err)
	}
}

func start(ctx context.Context, t *testing.T, p *localcluster.ControlPlane) kubernetes.Interface {
	t.Helper()
	cfg, err := p.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return kubernetes.NewForConfigOrDie(cfg)
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
