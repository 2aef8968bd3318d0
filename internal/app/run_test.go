package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// parse is the daemon's command line: the built-in controllers' options,
// parsed and validated.
func parse(t *testing.T, args ...string) (*options.Options, error) {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// The flags and the provider's cloud config are checked together, before
// any connection or lease: one error names every bad flag and config line.
func TestRunReportsFlagAndCloudConfigErrorsAtOnce(t *testing.T) {
	reg := cloud.NewRegistry()
	if err := reg.Register(lcprovider.ProviderName, lcprovider.New); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterConfigCheck(lcprovider.ProviderName, lcprovider.CheckConfig); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(path, []byte("url: http://127.0.0.1:1\ntoken: x\nrateLimitQPS: NaN\ntoken: y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parse(t, "--cloud-provider="+lcprovider.ProviderName, "--cloud-config="+path, "--cluster-name=Bad_Name",
		"--kubeconfig=/nonexistent/kubeconfig")
	if err == nil {
		t.Fatal("bad --cluster-name accepted")
	}
	err = Run(context.Background(), o, Deps{Providers: reg})
	for _, want := range []string{"--cluster-name=Bad_Name", "--cloud-config=" + path, "line 3: rateLimitQPS", "line 4: token: repeats line 2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run: %v does not name %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "/nonexistent/kubeconfig") {
		t.Errorf("Run went on to connect before reporting the validation errors: %v", err)
	}
}

func TestSafetyFlagsDefaultsAndValues(t *testing.T) {
	o, err := parse(t, "--cloud-provider=x")
	if err != nil {
		t.Fatal(err)
	}
	want := nodelifecycle.DeletionCap{Window: nodelifecycle.DefaultDeletionWindow, MaxShare: nodelifecycle.DefaultMaxDeletionShare,
		MaxZoneShare: nodelifecycle.DefaultMaxZoneDeletionShare, Min: nodelifecycle.DefaultMinDeletions}
	if got := deletionCap(o); got != want {
		t.Errorf("default cap %+v, want %+v", got, want)
	}
	o, err = parse(t, "--cloud-provider=x", "--node-deletion-window=1h", "--node-deletion-max-share=1",
		"--node-deletion-max-zone-share=0.5", "--node-deletion-min-per-window=7")
	if err != nil {
		t.Fatal(err)
	}
	want = nodelifecycle.DeletionCap{Window: time.Hour, MaxShare: 1, MaxZoneShare: 0.5, Min: 7}
	if got := deletionCap(o); got != want {
		t.Errorf("cap %+v, want %+v", got, want)
	}
}

// TestCloudAllocatorSkipsNodeIPAM: under CloudAllocator the cloud assigns
// pod CIDRs, so node-ipam-controller skips itself (saying why) and does
// not race the cloud's allocation.
func TestCloudAllocatorSkipsNodeIPAM(t *testing.T) {
	o, err := parse(t, "--cloud-provider=x", "--cidr-allocator-type=CloudAllocator", "--allocate-node-cidrs", "--cluster-cidr=10.244.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	started, reason, err := startNodeIPAMController(context.Background(), ControllerContext{Options: o})
	if started || err != nil || !strings.Contains(reason, "--cidr-allocator-type=CloudAllocator") {
		t.Errorf("node IPAM under CloudAllocator: started=%t reason=%q err=%v; want skipped, naming the flag", started, reason, err)
	}
}
