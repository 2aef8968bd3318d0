package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/cli"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

func run(ctx context.Context, args ...string) (string, error) {
	cmd := cli.NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

func TestClientCommands(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	srv, err := server.New(server.Config{StateDir: t.TempDir(), Pools: store.Pools{
		Internal: testbed.InstancePool(t),
		VIP:      testbed.VIPPool(t),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	t.Setenv(cli.EnvURL, srv.URL())
	t.Setenv(cli.EnvToken, srv.Token())

	if _, err := run(ctx, "instances", "create", "node", "--count", "3", "--tag", "pool=a"); err != nil {
		t.Fatal(err)
	}
	out, err := run(ctx, "instances", "list", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list api.InstanceList
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Items) != 3 {
		t.Fatalf("json list: %v %q", err, out)
	}
	id := list.Items[0].ID
	for _, verb := range []string{"stop", "start", "get"} {
		if _, err := run(ctx, "instances", verb, id); err != nil {
			t.Fatalf("%s: %v", verb, err)
		}
	}
	out, err = run(ctx, "instances", "attach-external-address", id, "-o", "json")
	var attached api.Instance
	if err != nil || json.Unmarshal([]byte(out), &attached) != nil || attached.Addresses.External == "" {
		t.Fatalf("attach-external-address: %v %q", err, out)
	}
	if _, err := run(ctx, "instances", "attach-external-address", id); err == nil || !strings.Contains(err.Error(), "Conflict") {
		t.Fatalf("second attach: %v", err)
	}
	out, err = run(ctx, "instances", "detach-external-address", id)
	if err != nil || !strings.Contains(out, "EXTERNAL") || strings.Contains(out, attached.Addresses.External) {
		t.Fatalf("detach-external-address: %v\n%s", err, out)
	}
	if _, err := run(ctx, "instances", "detach-external-address", id); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Fatalf("second detach: %v", err)
	}
	out, err = run(ctx, "instances", "list")
	if err != nil || !strings.Contains(out, "NAME") || !strings.Contains(out, "node-1") || !strings.Contains(out, "pool=a") {
		t.Fatalf("table: %v\n%s", err, out)
	}
	if _, err := run(ctx, "routes", "create", "r1", "--cidr", "10.244.0.0/24", "--instance", id); err != nil {
		t.Fatal(err)
	}
	out, _ = run(ctx, "routes", "list")
	if !strings.Contains(out, "10.244.0.0/24") {
		t.Fatalf("routes list:\n%s", out)
	}
	if _, err := run(ctx, "lbs", "create", "web", "--listener", "TCP:8080:30080", "--backend", id); err != nil {
		t.Fatal(err)
	}
	out, _ = run(ctx, "lbs", "list", "-o", "json")
	if !strings.Contains(out, `"name": "web"`) {
		t.Fatalf("lbs list:\n%s", out)
	}
	if _, err := run(ctx, "instances", "get", "i-0000000000000000"); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Fatalf("get unknown: %v", err)
	}
	out, _ = run(ctx, "stats")
	if !strings.Contains(out, "ListInstances") {
		t.Fatalf("stats:\n%s", out)
	}
	if _, err := run(ctx, "instances", "delete", id); err != nil {
		t.Fatal(err)
	}
}

func TestServeFlagValidation(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "--state-dir"},
		{[]string{"serve", "--state-dir", dir, "--latency", "-1s"}, "--latency"},
		{[]string{"serve", "--state-dir", dir, "--rate-limit", "-5"}, "--rate-limit"},
		{[]string{"serve", "--state-dir", dir, "--error-rate", "2"}, "--error-rate"},
		{[]string{"serve", "--state-dir", dir, "--quota-routes", "-1"}, "--quota-routes"},
		{[]string{"serve", "--state-dir", dir, "--vip-pool", "nope"}, "--vip-pool"},
		{[]string{"serve", "--state-dir", dir, "--vip6-pool", "10.0.0.0/8"}, `--vip6-pool "10.0.0.0/8": want an IPv6 CIDR`},
		{[]string{"serve", "--state-dir", dir, "--vip6-pool", "fd00::/127"}, "of at least /120"},
		{[]string{"serve", "--state-dir", dir, "--vip6-pool", "::ffff:10.0.0.0/104"}, "want an IPv6 CIDR"},
		{[]string{"serve", "--state-dir", dir, "--vip6-pool", "fd00:5354::/112"}, "needs --dataplane-netns"},
		{[]string{"serve", "--state-dir", dir, "--dataplane", "nat"}, `--dataplane "nat": want proxy or passthrough`},
		{[]string{"serve", "--state-dir", dir, "--dataplane", "passthrough"}, "needs --dataplane-netns"},
		{[]string{"serve", "--state-dir", dir, "--dataplane-netns", "stratus-no-such-ns"}, `--dataplane-netns "stratus-no-such-ns": no such network namespace`},
		{[]string{"serve", "--state-dir", dir, "--dataplane-target-network", "10.0.0.0/8"}, "only with --dataplane=passthrough"},
		{[]string{"serve", "--state-dir", dir, "--dataplane", "passthrough", "--dataplane-netns", "/proc/self/ns/net", "--dataplane-target-network", "fd00::/64"}, "want the IPv4 CIDR"},
		{[]string{"serve", "--state-dir", dir, "--dataplane", "passthrough", "--dataplane-netns", "/proc/self/ns/net", "--dataplane-target-network", "10.0.0.0/8,10.1.0.0/16"}, `"10.1.0.0/16" is not an IPv6 CIDR`},
		{[]string{"serve", "--state-dir", dir, "--rate-limit", "1e-300"}, "--rate-limit: rateLimit: 1e-300 is out of range"},
		{[]string{"serve", "--state-dir", dir, "--lb-provisioning-time", "2562047h"}, "--lb-provisioning-time: lbProvisioningTime: 2562047h0m0s is out of range"},
		{[]string{"serve", "--state-dir", dir, "--quota-lbs", "5000000"}, "--quota-lbs: quotas.loadBalancers: 5000000 is out of range"},
	} {
		if _, err := run(ctx, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: want error naming %s, got %v", tc.args, tc.want, err)
		}
	}
}

func TestServeRunsUntilCancelled(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, "serve", "--listen", "127.0.0.1:0", "--state-dir", t.TempDir())
		done <- err
	}()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
