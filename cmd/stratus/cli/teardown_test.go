package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2/ktesting"

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
	// A dry run lists, deletes nothing and exits 0.
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"teardown", "--cluster-name=gone", "--cloud-config=" + conf, "-o", "json"})
	if code := exitCode(cmd.ExecuteContext(t.Context())); code != teardown.ExitClean {
		t.Fatalf("dry run exit code %d, output %s", code, out.String())
	}
	var s teardown.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("JSON output %q: %v", out.String(), err)
	}
	if !s.DryRun || len(s.Objects) != 1 || s.Objects[0].State != teardown.StatePlanned || count("gone") != 1 {
		t.Fatalf("dry run: %+v, %d left", s, count("gone"))
	}
	// --yes deletes the cluster's load balancer and no other.
	text, code := runTeardown(t, "--cluster-name=gone", "--cloud-config="+conf, "--yes")
	if code != teardown.ExitClean || count("gone") != 0 || count("kept") != 1 {
		t.Fatalf("--yes: exit %d, gone has %d, kept has %d; output %s", code, count("gone"), count("kept"), text)
	}
	// What cannot be proved the cluster's stays, and the exit code says so.
	if _, err := admin.CreateLoadBalancer(t.Context(), api.CreateLoadBalancerRequest{Name: "hand-made", Cluster: "gone",
		LoadBalancerSpec: api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: "TCP", Port: 81, NodePort: 30081}}}}); err != nil {
		t.Fatal(err)
	}
	if _, code := runTeardown(t, "--cluster-name=gone", "--cloud-config="+conf, "--yes"); code != teardown.ExitNotClean || count("gone") != 1 {
		t.Fatalf("refused object: exit %d, gone has %d; want %d and the object kept", code, count("gone"), teardown.ExitNotClean)
	}
}

func TestTeardownCommandRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--cluster-name=x", "--output=yaml"},
		{"--cluster-name=x", "--cluster-cidr=10.0.0.0/33"},
		{"--cluster-name=x", "--wait=0s"},
		{"--cluster-name=x", "--cloud-config=/nonexistent/cloud.conf"},
		{"--cluster-name=x", "--cloud-provider=nonesuch"},
	} {
		if _, code := runTeardown(t, args...); code != teardown.ExitError {
			t.Errorf("teardown %s: exit %d, want %d", strings.Join(args, " "), code, teardown.ExitError)
		}
	}
}
