package ccm_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	cloudprovider "k8s.io/cloud-provider"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/stratus-ccm/stratus/pkg/ccm"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func factory(io.Reader) (cloudprovider.Interface, error) { return nil, nil }

// TestConfigMistakesAreClearErrors runs the command with a bad Config or
// --controllers value: each fails before touching any API server, with
// an error naming what is wrong.
func TestConfigMistakesAreClearErrors(t *testing.T) {
	noop := func(context.Context, ccm.ControllerContext) (bool, string, error) { return true, "", nil }
	cases := map[string]struct {
		cfg  ccm.Config
		args []string
		want string
	}{
		"duplicate provider": {
			cfg:  ccm.Config{Providers: []ccm.Provider{{Name: "a", Factory: factory}, {Name: "a", Factory: factory}}},
			want: `cloud provider "a": already registered`,
		},
		"both constructors": {
			cfg: ccm.Config{Providers: []ccm.Provider{{Name: "a", Factory: factory,
				New: func(context.Context, ccm.Inputs) (cloudprovider.Interface, error) { return nil, nil }}}},
			want: `cloud provider "a": set Factory or New, not both`,
		},
		"no constructor": {
			cfg:  ccm.Config{Providers: []ccm.Provider{{Name: "a"}}},
			want: `register cloud provider "a": name and factory are required`,
		},
		"controller named like a built-in": {
			cfg:  ccm.Config{Controllers: []ccm.Controller{{Name: "service", Start: noop}}},
			want: `extra controller "service": the name is already taken`,
		},
		"controller without start": {
			cfg:  ccm.Config{Controllers: []ccm.Controller{{Name: "mine"}}},
			want: `extra controller "mine": a start function is required`,
		},
		"flag default for a flag the daemon lacks": {
			cfg:  ccm.Config{FlagDefaults: map[string]string{"no-such-flag": "1"}},
			want: `FlagDefaults: the daemon has no flag --no-such-flag`,
		},
		"flag default the flag refuses": {
			cfg:  ccm.Config{FlagDefaults: map[string]string{"kube-api-qps": "fast"}},
			want: `FlagDefaults: --kube-api-qps=fast: set default:`,
		},
		"provider flag named like a daemon flag": {
			cfg:  ccm.Config{Flags: clusterNameFlag()},
			want: `provider flag --cluster-name (flag set "vendor"): the daemon already has a flag of that name`,
		},
		"unknown controller flag": {
			cfg:  ccm.Config{Controllers: []ccm.Controller{{Name: "mine", Start: noop}}},
			args: []string{"--controllers=*,yours"},
			want: `unknown controller "yours" (known: cloud-node-controller, cloud-node-lifecycle-controller, service-lb-controller, node-route-controller, node-ipam-controller, mine;`,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			// Never the process-wide registry a zero Config would use.
			c.cfg.Metrics = prometheus.NewRegistry()
			cmd := ccm.NewCommand(c.cfg)
			cmd.SetArgs(append([]string{"--cloud-provider=a", "--kubeconfig=/nonexistent"}, c.args...))
			cmd.SetOut(io.Discard)
			err := cmd.ExecuteContext(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestCommandNameDefaultsToUpstreams(t *testing.T) {
	if got := ccm.NewCommand(ccm.Config{}).Use; got != "cloud-controller-manager" {
		t.Errorf("Use = %q, want cloud-controller-manager", got)
	}
	if got := ccm.NewCommand(ccm.Config{Name: "mycloud-ccm"}).Use; got != "mycloud-ccm" {
		t.Errorf("Use = %q, want mycloud-ccm", got)
	}
}

func clusterNameFlag() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fss.FlagSet("vendor").String("cluster-name", "", "")
	return fss
}
