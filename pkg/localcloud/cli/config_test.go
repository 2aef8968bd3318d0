package cli_test

import (
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/cli"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
)

func TestConfigCommand(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	start := func() *server.Server {
		srv, err := server.New(server.Config{StateDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Setenv(cli.EnvURL, srv.URL())
		t.Setenv(cli.EnvToken, srv.Token())
		return srv
	}
	srv := start()
	defer func() { _ = srv.Close() }()

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
		{"ErrorRate=0.1", "ErrorRate: unknown knob"},
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
	srv = start()
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
