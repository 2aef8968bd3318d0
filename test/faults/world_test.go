package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const (
	clusterName = "faults"
	region      = "local-1"
	baseNodes   = 4
	// The knobs every scenario starts from: quick transitions so that the
	// figures measure Stratus, not localcloud's simulated waits.
	baseProvisioning = 200 * time.Millisecond
	baseDeletion     = 100 * time.Millisecond
)

// world is one control plane, one localcloud and the Stratus replicas,
// all real processes, shared by the scenarios.
type world struct {
	t      *testing.T
	ctx    context.Context
	dir    string
	binDir string

	plane      *localcluster.ControlPlane
	kubeconfig string
	cs         kubernetes.Interface

	cloudProc *testbed.Process
	cloud     *lcclient.Client
	cloudCfg  string
	// proxy stands between the replicas and the cloud (proxy_test.go).
	proxy *listProxy

	mu   sync.Mutex
	logs []string // every process' log file, for the panic scan
	// nodes maps each Node that must exist to its instance id; gone holds
	// the Nodes whose instance was deleted, which must not.
	nodes map[string]string
	gone  map[string]bool
	// foreign maps each Node of another platform to its providerID: it
	// must stay as registered, uninitialized and never deleted.
	foreign map[string]string
	// other is what another cluster keeps in the same cloud
	// (safety_test.go); no replica may touch it.
	other *otherCluster
}

func newWorld(t *testing.T, ctx context.Context) *world {
	t.Helper()
	w := &world{
		t: t, ctx: ctx, dir: t.TempDir(),
		binDir: testbed.RequireBinaries(t, "kube-apiserver", "etcd", "stratus"),
		nodes:  map[string]string{}, gone: map[string]bool{}, foreign: map[string]string{},
	}
	w.startCloud()
	if t.Failed() {
		t.FailNow()
	}
	w.startControlPlane()
	t.Cleanup(w.dumpLogs)
	return w
}

// logFile returns a new log file path in the world's directory and
// remembers it for the panic scan.
func (w *world) logFile(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := filepath.Join(w.dir, fmt.Sprintf("%02d-%s.log", len(w.logs), name))
	w.logs = append(w.logs, p)
	return p
}

func (w *world) startControlPlane() {
	t := w.t
	etcdLog, err := os.Create(w.logFile("etcd"))
	if err != nil {
		t.Fatal(err)
	}
	apiLog, err := os.Create(w.logFile("kube-apiserver"))
	if err != nil {
		t.Fatal(err)
	}
	w.plane = &localcluster.ControlPlane{
		BinDir: w.binDir, EtcdDataDir: filepath.Join(w.dir, "etcd"), CertDir: filepath.Join(w.dir, "pki"),
		EtcdLog: etcdLog, APIServerLog: apiLog,
		// Room for every scenario's Services at once.
		APIServerArgs: []string{"--service-cluster-ip-range=10.0.0.0/16"},
	}
	cfg, err := w.plane.Start(w.ctx)
	t.Cleanup(func() {
		w.plane.Stop()
		_ = etcdLog.Close()
		_ = apiLog.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	w.kubeconfig = filepath.Join(w.dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, w.kubeconfig); err != nil {
		t.Fatal(err)
	}
	// The invariant checks list every Node and Service several times a
	// second: client-go's default 5 QPS would throttle the test itself.
	cfg.QPS, cfg.Burst = 100, 200
	if w.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
}

// startCloud runs `stratus localcloud serve` on a free port with loopback
// pools claimed for the test (testbed.VIPPool), apart from the sandbox's
// and other tests' pools.
func (w *world) startCloud() {
	t := w.t
	state := filepath.Join(w.dir, "localcloud")
	port := testbed.FreePort(t)
	w.cloudProc = testbed.StartProcess(t, w.logFile("localcloud"), filepath.Join(w.binDir, "stratus"),
		"localcloud", "serve", "--listen=127.0.0.1:"+strconv.Itoa(port), "--state-dir="+state,
		"--vip-pool="+testbed.VIPPool(t).String(),
		"--internal-pool="+testbed.InstancePool(t).String(),
		// Never bound: a fixed range is enough.
		"--external-pool=127.5.0.0/24",
		"--lb-provisioning-time="+baseProvisioning.String(), "--lb-deletion-time="+baseDeletion.String())
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	tokenFile := filepath.Join(state, server.TokenFileName)
	err := wait.PollUntilContextTimeout(w.ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if w.cloudProc.Exited() {
			return false, fmt.Errorf("localcloud exited")
		}
		tok, err := os.ReadFile(tokenFile)
		if err != nil || len(tok) == 0 {
			return false, nil
		}
		// The test's own client retries nothing: a scenario decides
		// itself what to do with a 429 or an injected 503.
		c, err := lcclient.New(url, strings.TrimSpace(string(tok)), lcclient.WithMaxRetries(0))
		if err != nil {
			return false, err
		}
		if _, err := c.Config(ctx); err != nil {
			return false, nil
		}
		w.cloud = c
		return true, nil
	})
	if err != nil {
		t.Errorf("localcloud did not come up: %v", err)
		return
	}
	w.proxy = startListProxy(t, url)
	w.cloudCfg = filepath.Join(w.dir, "cloud.yaml")
	cfg := "url: " + w.proxy.url + "\ntokenFile: " + tokenFile + "\nclusterName: " + clusterName + "\n"
	if err := os.WriteFile(w.cloudCfg, []byte(cfg), 0o600); err != nil {
		t.Error(err)
	}
}

// setKnobs changes localcloud's knobs, failing the test on error.
func (w *world) setKnobs(p api.KnobsPatch) {
	w.t.Helper()
	if _, err := w.cloud.UpdateConfig(w.ctx, p); err != nil {
		w.t.Fatalf("set knobs: %v", err)
	}
}

// addNodes creates an instance per name and registers its Node as a
// kubelet with --cloud-provider=external does, Ready; the test owns the
// Node's status from then on (no kwok, no kube-controller-manager).
func (w *world) addNodes(names ...string) {
	w.t.Helper()
	for _, name := range names {
		in, err := w.cloud.CreateInstance(w.ctx, api.CreateInstanceRequest{
			Name: name, Zone: region + "a", Region: region, Type: "standard-2",
			Tags: map[string]string{api.TagCluster: clusterName},
		})
		if err != nil {
			w.t.Fatalf("create instance %s: %v", name, err)
		}
		if _, err := localcluster.CreateNode(w.ctx, w.cs, name, localcluster.NodeOptions{Unmanaged: true}); err != nil {
			w.t.Fatal(err)
		}
		w.setReady(name, corev1.ConditionTrue)
		w.mu.Lock()
		w.nodes[name] = in.ID
		w.mu.Unlock()
	}
}

func (w *world) setReady(name string, status corev1.ConditionStatus) {
	w.t.Helper()
	if err := localcluster.SetReady(w.ctx, w.cs, name, status); err != nil {
		w.t.Fatalf("node %s Ready=%s: %v", name, status, err)
	}
}

// deleteInstance terminates a node's instance in the cloud; from then on
// the invariants expect its Node to be deleted.
func (w *world) deleteInstance(name string) {
	w.t.Helper()
	w.mu.Lock()
	id := w.nodes[name]
	w.mu.Unlock()
	if _, err := w.cloud.DeleteInstance(w.ctx, id); err != nil {
		w.t.Fatalf("delete instance %s (%s): %v", name, id, err)
	}
	w.mu.Lock()
	delete(w.nodes, name)
	w.gone[name] = true
	w.mu.Unlock()
}

// namespace creates a scenario's namespace.
func (w *world) namespace(name string) string {
	w.t.Helper()
	_, err := w.cs.CoreV1().Namespaces().Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return name
}

// waitFor polls cond every 200 ms until it holds, failing t with what and
// the last reason cond gave on timeout.
func waitFor(ctx context.Context, t *testing.T, what string, timeout time.Duration, cond func(context.Context) (bool, string)) {
	t.Helper()
	var why string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, reason := cond(ctx)
		if ctx.Err() == nil {
			// A reason given as the wait timed out is only the timeout.
			why = reason
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, why)
	}
}

// dumpLogs shows the end of every log of a failed run: the test's
// temporary directory is gone once it ends.
func (w *world) dumpLogs() {
	if !w.t.Failed() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.logs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		b = b[max(0, len(b)-6000):]
		w.t.Logf("--- %s (end):\n%s", filepath.Base(p), b)
	}
}
