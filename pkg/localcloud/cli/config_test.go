package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/cli"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
)

// startServer starts a localcloud on dir and points the commands at it.
func startServer(ctx context.Context, t *testing.T, dir string) *server.Server {
	t.Helper()
	srv, err := server.New(server.Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv(cli.EnvURL, srv.URL())
	t.Setenv(cli.EnvToken, srv.Token())
	return srv
}

func TestConfigCommand(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	srv := startServer(ctx, t, dir)

	out, err := run(ctx, "config", "get")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range api.KnobKeys() {
		if !strings.Contains(out, key) {
			t.Errorf("config get does not show %s:\n%s", key, out)
		}
	}
	out, err = run(ctx, "config", "set", "errorRate=0.2", "latency=20ms", "quotas.loadBalancers=3", "lbProvisioningTime=5s", "rateLimit=50", "rateBurst=5")
	if err != nil || !strings.Contains(out, "20ms") {
		t.Fatalf("config set: %v\n%s", err, out)
	}
	// Every knob refused names itself and the value; nothing is applied.
	for _, tc := range []struct{ arg, want string }{
		{"rateLimit=1e-300", "rateLimit: 1e-300 is out of range"},
		{"lbProvisioningTime=2562047h", "lbProvisioningTime: 2562047h0m0s is out of range"},
		{"errorRate=1.5", "errorRate: 1.5 is out of range"},
		{"errorRate=NaN", "errorRate: NaN is not a finite number"},
		{"latency=soon", `latency: "soon" is not a duration`},
		{"quotas.routesPerCluster=-1", "quotas.routesPerCluster: -1 is out of range"},
		{"rateBurst=many", `rateBurst: "many" is not an integer`},
		{"ErrorRate=0.1", "ErrorRate=0.1: InvalidArgument: ErrorRate: unknown knob"},
		{"errorRate", "want KEY=VALUE"},
	} {
		if _, err := run(ctx, "config", "set", "latency=0s", tc.arg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config set %s: want %q, got %v", tc.arg, tc.want, err)
		}
	}
	if _, err := run(ctx, "config", "get", "Latency"); err == nil || !strings.Contains(err.Error(), "Latency: unknown knob") {
		t.Errorf("config get Latency: %v", err)
	}
	// The knobs are in localcloud's state: a restarted cloud has them.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	startServer(ctx, t, dir)
	out, err = run(ctx, "config", "get", "errorRate", "latency", "quotas.loadBalancers", "lbProvisioningTime")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0.2", "20ms", "3", "5s"} {
		if !strings.Contains(out, want) {
			t.Errorf("after restart, config get lacks %s:\n%s", want, out)
		}
	}
}

// The sandbox's env file exports the cluster (and region and zone): the
// commands then default to them, and instances are named by name.
func TestClusterFromEnvironment(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	startServer(ctx, t, t.TempDir())
	t.Setenv(cli.EnvCluster, "sandbox")
	t.Setenv(cli.EnvRegion, "local-1")
	t.Setenv(cli.EnvZone, "local-1b")

	out, err := run(ctx, "instances", "create", "node-0042", "-o", "json")
	var list api.InstanceList
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 1 {
		t.Fatalf("create: %v %q", err, out)
	}
	inst := list.Items[0]
	if inst.Tags[api.TagCluster] != "sandbox" || inst.Region != "local-1" || inst.Zone != "local-1b" {
		t.Fatalf("instance does not default to the environment's cluster, region and zone: %+v", inst)
	}
	if out, err := run(ctx, "instances", "create", "other", "--tag", "cluster=elsewhere", "-o", "json"); err != nil || !strings.Contains(out, `"cluster": "elsewhere"`) {
		t.Fatalf("an explicit cluster tag must win: %v %s", err, out)
	}
	if out, err := run(ctx, "instances", "stop", "node-0042"); err != nil || !strings.Contains(out, "stopped") {
		t.Fatalf("stop by name: %v\n%s", err, out)
	}
	if _, err := run(ctx, "instances", "stop", "no-such-node"); err == nil || !strings.Contains(err.Error(), "no-such-node") {
		t.Fatalf("stop of an unknown name: %v", err)
	}
	if _, err := run(ctx, "routes", "create", "r1", "--cidr", "10.244.0.0/24", "--instance", inst.ID); err != nil {
		t.Fatal(err)
	}
	out, err = run(ctx, "routes", "list")
	if err != nil || !strings.Contains(out, "10.244.0.0/24") {
		t.Fatalf("routes list in the environment's cluster: %v\n%s", err, out)
	}
	if out, _ := run(ctx, "routes", "list", "--cluster", "kubernetes"); strings.Contains(out, "10.244.0.0/24") {
		t.Fatalf("route created in cluster kubernetes instead of sandbox:\n%s", out)
	}
}
