package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/teardown"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/localcloudtest"
)

// teardownCloud starts a real localcloud holding one load balancer of
// cluster "gone" and one of cluster "kept" (each made for a Service
// default/web, as the provider tags them), writes the provider's config
// and returns its path and an admin client.
func teardownCloud(t *testing.T) (string, *client.Client) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	lc := localcloudtest.Start(t)
	admin := lc.Admin
	for i, cluster := range []string{"gone", "kept"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID(fmt.Sprintf("%d0000000-0000-0000-0000-000000000000", i+1))}}
		if _, err := admin.CreateLoadBalancer(ctx, api.CreateLoadBalancerRequest{Name: cloudprovider.DefaultLoadBalancerName(svc), Cluster: cluster,
			Tags:             map[string]string{api.TagServiceNamespace: "default", api.TagServiceName: "web", api.TagServiceUID: string(svc.UID)},
			LoadBalancerSpec: api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: "TCP", Port: 80, NodePort: 30080}}}}); err != nil {
			t.Fatal(err)
		}
	}
	return lc.ConfigFile, admin
}

func runTeardown(t *testing.T, args ...string) (string, int) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(append([]string{"teardown"}, args...))
	code := exitCode(cmd.ExecuteContext(ctx))
	return out.String(), code
}

func TestTeardownCommand(t *testing.T) {
	conf, admin := teardownCloud(t)
	count := func(cluster string) int {
		lbs, err := admin.ListAllLoadBalancers(t.Context(), client.ListOptions{Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		return len(lbs)
	}
	// A dry run lists and deletes nothing; the load balancer was just
	// made, a sign of life, so it says --yes would be refused (exit 3).
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"teardown", "--cluster-name=gone", "--cloud-config=" + conf, "-o", "json"})
	if code := exitCode(cmd.ExecuteContext(t.Context())); code != teardown.ExitAlive {
		t.Fatalf("dry run exit code %d, want %d; output %s", code, teardown.ExitAlive, out.String())
	}
	var s teardown.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("JSON output %q: %v", out.String(), err)
	}
	if !s.DryRun || len(s.Objects) != 1 || s.Objects[0].State != teardown.StatePlanned || count("gone") != 1 ||
		!s.RefusedAlive || len(s.SignsOfLife) != 1 || s.SignsOfLife[0].Object != "loadBalancer "+s.Objects[0].Name {
		t.Fatalf("dry run: %+v, %d left", s, count("gone"))
	}
	// --yes alone is refused, names the sign, and deletes nothing.
	text, code := runTeardown(t, "--cluster-name=gone", "--cloud-config="+conf, "--yes")
	if code != teardown.ExitAlive || count("gone") != 1 || !strings.Contains(text, "loadBalancer "+s.Objects[0].Name+" (Service default/web") ||
		!strings.Contains(text, "by localcloud-client") || !strings.Contains(text, "--force") {
		t.Fatalf("--yes: exit %d, gone has %d; output %s", code, count("gone"), text)
	}
	// --yes --force deletes the cluster's load balancer and no other.
	text, code = runTeardown(t, "--cluster-name=gone", "--cloud-config="+conf, "--yes", "--force")
	if code != teardown.ExitClean || count("gone") != 0 || count("kept") != 1 {
		t.Fatalf("--yes --force: exit %d, gone has %d, kept has %d; output %s", code, count("gone"), count("kept"), text)
	}
	// What cannot be proved the cluster's stays, and the exit code says so.
	if _, err := admin.CreateLoadBalancer(t.Context(), api.CreateLoadBalancerRequest{Name: "hand-made", Cluster: "gone",
		LoadBalancerSpec: api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: "TCP", Port: 81, NodePort: 30081}}}}); err != nil {
		t.Fatal(err)
	}
	if _, code := runTeardown(t, "--cluster-name=gone", "--cloud-config="+conf, "--yes", "--force"); code != teardown.ExitNotClean || count("gone") != 1 {
		t.Fatalf("refused object: exit %d, gone has %d; want %d and the object kept", code, count("gone"), teardown.ExitNotClean)
	}
}

// With --kubeconfig for an API server that does not answer, the teardown
// says so and goes on: that is a sign of nothing.
func TestTeardownCommandUnreachableAPIServer(t *testing.T) {
	conf, _ := teardownCloud(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Port 1 on the loopback refuses at once.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	text, code := runTeardown(t, "--cluster-name=gone", "--cloud-config="+conf, "--kubeconfig="+kubeconfig, "--change-window=1ns")
	if code != teardown.ExitClean || !strings.Contains(text, "Lease kube-system/cloud-controller-manager: the cluster's API server did not answer") ||
		!strings.Contains(text, "Services: the cluster's API server did not answer") {
		t.Fatalf("exit %d, want %d and the silent API server said; output %s", code, teardown.ExitClean, text)
	}
}

// The Lease the teardown looks at by default is the daemon's.
func TestTeardownLeaseDefaultsAreTheDaemons(t *testing.T) {
	o := options.New(nil)
	if o.LeaderElectNamespace != teardown.DefaultLeaseNamespace || o.LeaderElectName != teardown.DefaultLeaseName {
		t.Errorf("daemon's Lease %s/%s, teardown's default %s/%s", o.LeaderElectNamespace, o.LeaderElectName, teardown.DefaultLeaseNamespace, teardown.DefaultLeaseName)
	}
}

func TestTeardownCommandRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--cluster-name=x", "--output=yaml"},
		{"--cluster-name=x", "--cluster-cidr=10.0.0.0/33"},
		{"--cluster-name=x", "--wait=0s"},
		{"--cluster-name=x", "--change-window=0s"},
		{"--cluster-name=x", "--leader-elect-resource-name="},
		{"--cluster-name=x", "--cloud-config=/nonexistent/cloud.conf"},
		{"--cluster-name=x", "--cloud-provider=nonesuch"},
	} {
		if _, code := runTeardown(t, args...); code != teardown.ExitError {
			t.Errorf("teardown %s: exit %d, want %d", strings.Join(args, " "), code, teardown.ExitError)
		}
	}
}
