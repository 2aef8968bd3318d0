package vendors_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// swap is one vendor manifest whose image is replaced by Stratus'.
type swap struct {
	vendor, file string
	rbac         []string
	// changed is what the swap changes besides the image (inImage), as
	// testdata/README.md lists it.
	changed string
	// env are the container's environment variables its args refer to.
	env map[string]string
	// lease is the Lease the daemon takes with these args; empty with
	// --leader-elect=false.
	lease string
	// initializes: the args run the node controller (Azure's disable it),
	// so a new Node is initialized.
	initializes bool
}

// TestVendorManifestsRunStratus runs each vendor's published container
// arguments, unchanged but for what inImage says the image swap changes,
// with the Stratus image's entrypoint (a pkg/ccm binary linking a stand-in
// under the vendor's provider name, invoked as cloud-controller-manager),
// as the vendor's ServiceAccount under the vendor's published RBAC only,
// against a real API server: the daemon starts and stays up, answers the
// kubelet's probe, takes the Lease its args name, and initializes a Node
// where its args run the node controller. As in test/e2e's
// TestDefaultManifestRunsStratus, what a pod gets from its node is supplied
// by hand: the ServiceAccount's token in a kubeconfig, a cloud config file
// for --cloud-config, the secure port on loopback at a free port.
//
// Three vendors' manifests do not start Stratus yet (issue 22), so they
// are not in the table: DigitalOcean's (no --cloud-provider: its main sets
// the default, which a pkg/ccm binary cannot; its provider's false
// HasClusterID no longer stops the daemon), AWS'
// (--use-service-account-credentials under RBAC that grants only
// upstream's controller ServiceAccounts: exits after winning the Lease),
// and kube-vip's (no --cloud-provider: its main sets the default, which a
// pkg/ccm binary cannot).
func TestVendorManifestsRunStratus(t *testing.T) {
	bin := buildVendorCCM(t)
	for _, c := range []swap{
		{vendor: "hcloud", file: "ccm", rbac: []string{"ccm"}, initializes: true},
		{vendor: "hcloud", file: "ccm-networks", rbac: []string{"ccm-networks"}, initializes: true},
		{vendor: "azure", file: "cloud-controller-manager", rbac: []string{"cloud-controller-manager"}, lease: "cloud-controller-manager"},
		{vendor: "openstack", file: "openstack-cloud-controller-manager-ds",
			rbac:    []string{"openstack-cloud-controller-manager-ds", "cloud-controller-manager-roles", "cloud-controller-manager-role-bindings"},
			changed: "first arg /bin/openstack-cloud-controller-manager",
			env:     map[string]string{"CLUSTER_NAME": "kubernetes", "CLOUD_CONFIG": "/etc/config/cloud.conf"},
			lease:   "cloud-controller-manager", initializes: true},
	} {
		t.Run(c.vendor+"/"+c.file, func(t *testing.T) { c.run(t, bin) })
	}
}

func (c swap) run(t *testing.T, bin string) {
	env := testbed.Start(t)
	ctx := testbed.Context(t, 3*time.Minute)
	ctr := vendorContainer(t, c.vendor, c.file)
	args, changed := inImage(ctr)
	if changed != c.changed {
		t.Fatalf("the swap changes %q besides the image, want %q", changed, c.changed)
	}
	if err := deploy.Apply(ctx, env.Config, vendorRBAC(t, c.vendor, c.rbac...), deploy.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	args = podEnvironment(ctx, t, env, ctr.ServiceAccountName, expand(t, args, c.env))
	port := testbed.FreePort(t)
	p := testbed.StartProcess(t, filepath.Join(t.TempDir(), "ccm.log"), bin,
		append(args, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))...)
	poll := func(what string, cond func(ctx context.Context) (bool, error)) {
		t.Helper()
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if p.Exited() {
				log, _ := os.ReadFile(p.LogFile)
				return false, fmt.Errorf("the daemon with %v exited:\n%s", args, log)
			}
			return cond(ctx)
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("the daemon answering the kubelet's probe on /healthz", func(ctx context.Context) (bool, error) {
		return healthz(ctx, port) == http.StatusOK, nil
	})
	if c.lease != "" {
		poll("the daemon holding the Lease kube-system/"+c.lease, func(ctx context.Context) (bool, error) {
			l, err := env.Clientset.CoordinationV1().Leases("kube-system").Get(ctx, c.lease, metav1.GetOptions{})
			return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
		})
	}
	if !c.initializes {
		return
	}
	if _, err := localcluster.CreateNode(ctx, env.Clientset, "worker", localcluster.NodeOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("node worker initialized", func(ctx context.Context) (bool, error) {
		n, err := env.Clientset.CoreV1().Nodes().Get(ctx, "worker", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
		return n.Spec.ProviderID == c.vendor+"://worker" && !tainted, nil
	})
}

// podEnvironment gives args what a pod has from its node: --cloud-config
// pointing at a file in a directory standing in for its volume, and a
// kubeconfig holding the ServiceAccount's token for the in-cluster config.
func podEnvironment(ctx context.Context, t *testing.T, env *testbed.Env, serviceAccount string, args []string) []string {
	t.Helper()
	dir := t.TempDir()
	for i, a := range args {
		if path, ok := strings.CutPrefix(a, "--cloud-config="); ok {
			file := filepath.Join(dir, filepath.Base(path))
			if err := os.WriteFile(file, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args[i] = "--cloud-config=" + file
		}
	}
	cfg, err := localcluster.ServiceAccountConfig(ctx, env.Config, "kube-system", serviceAccount, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return append(args, "--kubeconfig="+kubeconfig)
}

// healthz GETs /healthz as the kubelet's prober does: HTTPS, no
// credentials, the serving certificate not verified.
func healthz(ctx context.Context, port int) int {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // as the kubelet's prober
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", nil)
	if err != nil {
		return 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
