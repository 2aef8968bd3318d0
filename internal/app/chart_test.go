package app

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// chartDir is charts/stratus, from this package's directory.
var chartDir = filepath.Join("..", "..", "charts", "stratus")

// TestChartControllersAreTheTable fails when the chart's copy of the
// controller table differs from the table: the chart renders --controllers
// and every controller's RBAC from that file alone.
func TestChartControllersAreTheTable(t *testing.T) {
	t.Parallel()
	want, err := ChartControllers()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(chartDir, ChartControllersFile))
	if err != nil {
		t.Fatalf("%v; run `make manifests`", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("charts/stratus/%s differs from the controller table; run `make manifests`", ChartControllersFile)
	}
}

// TestTableNamesDaemonFlags: the flags a table entry says a controller
// needs, or is enabled by, are the daemon's (the chart maps each to its
// value, and fails the render on one it does not know).
func TestTableNamesDaemonFlags(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("stratus", pflag.ContinueOnError)
	NewOptions().AddFlags(fs)
	for _, e := range builtinControllers() {
		for _, f := range append(slices.Clone(e.requires), e.chartEnabledBy) {
			if f != "" && fs.Lookup(f) == nil {
				t.Errorf("%s names --%s, which is no flag of the daemon", e.Name, f)
			}
		}
		if len(e.rbac.Rules) == 0 || len(e.rbac.Writes) == 0 {
			t.Errorf("%s has no RBAC rules or writes in its entry", e.Name)
		}
	}
}

// renderChart renders a copy of the chart whose controller table is
// table's, with the helm CLI an operator uses, and returns the manifests.
func renderChart(t *testing.T, table []controllerEntry, values map[string]any) string {
	t.Helper()
	helm := filepath.Join(testbed.RequireBinaries(t, "helm"), "helm")
	dir := filepath.Join(t.TempDir(), "stratus")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	data, err := chartControllers(table)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ChartControllersFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	vals, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	valuesFile := filepath.Join(t.TempDir(), "values.json")
	if err := os.WriteFile(valuesFile, vals, 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), helm, "template", "stratus", dir, "-n", "kube-system", "-f", valuesFile)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", vals, err, out)
	}
	return string(out)
}

// renderedArgs are the daemon's flags in rendered manifests, by name.
func renderedArgs(t *testing.T, rendered string) map[string]string {
	t.Helper()
	args := map[string]string{}
	for line := range strings.Lines(rendered) {
		arg, ok := strings.CutPrefix(strings.TrimSpace(line), "- --")
		if !ok {
			continue
		}
		name, value, _ := strings.Cut(arg, "=")
		args[name] = value
	}
	if _, ok := args["controllers"]; !ok {
		t.Fatalf("rendered manifests pass no --controllers:\n%s", rendered)
	}
	return args
}

// TestSixthControllerGetsChartRBAC adds a controller to the table by one
// entry, with its rules, and checks that the chart, given the file `make
// manifests` writes from that table, renders its ClusterRole and binds it
// to its ServiceAccount, whose token the daemon may then request; and that
// --controllers disables it by its alias.
func TestSixthControllerGetsChartRBAC(t *testing.T) {
	t.Parallel()
	table := append(builtinControllers(), sixthEntry(nil))
	out := renderChart(t, table, nil)
	for _, want := range []string{
		"kind: ClusterRole\nmetadata:\n  name: stratus:sixth-controller\n",
		"rules:\n  # The count, kept on each ConfigMap.\n  - apiGroups: [\"\"]\n    resources: [\"configmaps\"]\n    verbs: [\"patch\"]\n",
		"kind: ClusterRoleBinding\nmetadata:\n  name: stratus:sixth-controller\n",
		"  - kind: ServiceAccount\n    name: sixth-counter\n    namespace: kube-system\n",
		`resourceNames: ["node-controller","service-controller","sixth-counter"]`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the chart renders no %q for the sixth controller", want)
		}
	}
	out = renderChart(t, table, map[string]any{"controllers": []string{"*", "-sixth"}})
	if strings.Contains(out, "stratus:sixth-controller") || strings.Contains(out, "sixth-counter") {
		t.Error("the chart renders the sixth controller's RBAC with --controllers=*,-sixth")
	}
}

// TestChartControllersAreAccepted renders the chart and hands its
// --controllers to the daemon's own resolution: the daemon must accept it,
// and the controllers that then start (enabled, and given the flags they
// need) must be exactly those the chart renders a ClusterRole for. The
// alias cases are the ones the chart once knew only some names of.
func TestChartControllersAreAccepted(t *testing.T) {
	t.Parallel()
	ipam := map[string]any{"allocateNodeCIDRs": true, "clusterCIDR": "10.244.0.0/16"}
	with := func(extra map[string]any) map[string]any {
		out := map[string]any{"configureCloudRoutes": true}
		for k, v := range ipam {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	table := builtinControllers()
	for name, c := range map[string]struct {
		values      map[string]any
		want        string // --controllers
		ipamRunning bool
	}{
		"default":                  {nil, "*", false},
		"allocate":                 {with(nil), "*,node-ipam-controller", true},
		"disabled by alias":        {with(map[string]any{"controllers": []string{"*", "-node-ipam"}}), "*,-node-ipam", false},
		"disabled by other alias":  {with(map[string]any{"controllers": []string{"*", "-nodeipam"}}), "*,-nodeipam", false},
		"disabled by name":         {with(map[string]any{"controllers": []string{"*", "-node-ipam-controller"}}), "*,-node-ipam-controller", false},
		"named by alias":           {with(map[string]any{"controllers": []string{"*", "node-ipam"}}), "*,node-ipam", true},
		"named without allocation": {map[string]any{"controllers": []string{"*", "node-ipam"}}, "*,node-ipam", false},
		"routes disabled by alias": {with(map[string]any{"controllers": []string{"*", "-route"}}), "*,-route,node-ipam-controller", true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := renderChart(t, table, c.values)
			args := renderedArgs(t, out)
			if args["controllers"] != c.want {
				t.Errorf("--controllers=%s, want %s", args["controllers"], c.want)
			}
			enabled, err := options.ResolveControllers(strings.Split(args["controllers"], ","), vocabulary(table))
			if err != nil {
				t.Fatalf("the daemon refuses the chart's --controllers: %v", err)
			}
			for _, e := range table {
				starts := slices.Contains(enabled, e.Name)
				for _, f := range e.requires {
					if v := args[f]; v == "" || v == "false" {
						starts = false
					}
				}
				if role := strings.Contains(out, "name: stratus:"+e.Name+"\n"); role != starts {
					t.Errorf("%s: the daemon starts it: %t, the chart renders its role: %t", e.Name, starts, role)
				}
				if e.Name == nodeipam.ControllerName && starts != c.ipamRunning {
					t.Errorf("node IPAM runs: %t, want %t", starts, c.ipamRunning)
				}
			}
		})
	}
}
