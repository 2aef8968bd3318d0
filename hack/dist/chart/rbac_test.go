package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stratus-ccm/stratus/hack/dist/chart"
)

func renderRBAC(t *testing.T, vals map[string]any) string {
	t.Helper()
	out, err := chart.Render(chartDir, chart.Options{Values: vals, ShowOnly: []string{"templates/rbac.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRBACFollowsTheControllers: a controller that does not run gets no
// role, and without per-controller credentials the roles are bound to the
// daemon's ServiceAccount, with no token requests.
func TestRBACFollowsTheControllers(t *testing.T) {
	network := map[string]any{"allocateNodeCIDRs": true, "configureCloudRoutes": true, "clusterCIDR": "10.244.0.0/16"}
	for name, c := range map[string]struct {
		vals          map[string]any
		roles, absent []string
	}{
		"default": {nil,
			[]string{"resources: [\"services/status\"]\n    verbs: [\"patch\"]", "stratus:cloud-node-controller", "stratus:cloud-node-lifecycle-controller", "stratus:service-lb-controller", "stratus:controller-tokens"},
			[]string{"stratus:node-route-controller", "stratus:node-ipam-controller", "Observe mode", "resources: [\"nodes\", \"nodes/status\"]\n    verbs: [\"get\"]"}},
		"network": {network,
			[]string{"stratus:node-route-controller", "stratus:node-ipam-controller", `resourceNames: ["node-controller","route-controller","service-controller"]`},
			nil},
		"routes without IPAM": {map[string]any{"configureCloudRoutes": true, "clusterCIDR": "10.244.0.0/16"},
			[]string{"stratus:node-route-controller"}, []string{"stratus:node-ipam-controller"}},
		"IPAM without routes": {map[string]any{"allocateNodeCIDRs": true, "clusterCIDR": "10.244.0.0/16"},
			[]string{"stratus:node-ipam-controller"}, []string{"stratus:node-route-controller"}},
		"disabled by name and alias": {map[string]any{"controllers": []any{"*", "-service", "-cloud-node-lifecycle-controller"}},
			[]string{"stratus:cloud-node-controller"}, []string{"stratus:service-lb-controller", "stratus:cloud-node-lifecycle-controller", "name: service-controller\n"}},
		"only one": {map[string]any{"controllers": []any{"cloud-node"}},
			[]string{"stratus:cloud-node-controller", `resourceNames: ["node-controller"]`}, []string{"stratus:service-lb-controller"}},
		"a migration lease": {map[string]any{"rbac": map[string]any{"extraLeaseNames": []any{"ccm-migration"}}},
			[]string{`resourceNames: ["ccm-migration"]`}, nil},
		"observe mode": {map[string]any{"extraArgs": []any{"--observe"}},
			[]string{"resources: [\"nodes\", \"nodes/status\"]\n    verbs: [\"get\"]", "resources: [\"services/status\"]\n    verbs: [\"get\"]"}, nil},
		"a provider's own controller": {map[string]any{"rbac": map[string]any{"extraControllers": []any{"mycloud-firewall"}}},
			[]string{`"service-controller","mycloud-firewall"]`}, []string{"kind: ServiceAccount\nmetadata:\n  name: mycloud-firewall"}},
		"daemon credentials": {map[string]any{"useServiceAccountCredentials": false},
			[]string{"stratus:cloud-node-controller"}, []string{"stratus:controller-tokens", "serviceaccounts/token", "name: node-controller\n"}},
	} {
		t.Run(name, func(t *testing.T) {
			out := renderRBAC(t, c.vals)
			for _, w := range c.roles {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q", w)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(out, a) {
					t.Errorf("renders %q", a)
				}
			}
		})
	}
}

// TestControllerServiceAccountsAreNotShipped: the chart declares none of
// the controllers' ServiceAccounts (upstream's node-controller is
// kube-controller-manager's own, and each may be shared with another
// manager: uninstalling Stratus must not delete them); the daemon creates a
// missing one, as upstream's does, so its token Role grants create on
// ServiceAccounts in kube-system. Rendered without a cluster, as the plain
// manifests are, the chart declares no ServiceAccount but the daemon's.
func TestControllerServiceAccountsAreNotShipped(t *testing.T) {
	network := map[string]any{"allocateNodeCIDRs": true, "configureCloudRoutes": true, "clusterCIDR": "10.244.0.0/16",
		"rbac": map[string]any{"extraControllers": []any{"mycloud-firewall"}}}
	out := renderRBAC(t, network)
	if n := strings.Count(out, "apiVersion: v1\nkind: ServiceAccount\n"); n != 1 || !strings.Contains(out, "kind: ServiceAccount\nmetadata:\n  name: cloud-controller-manager\n") {
		t.Errorf("renders %d ServiceAccounts, want only the daemon's:\n%s", n, out)
	}
	role := "resources: [\"serviceaccounts\"]\n    verbs: [\"create\"]"
	if !strings.Contains(out, role) {
		t.Errorf("the token Role lacks %q", role)
	}
	if out := renderRBAC(t, map[string]any{"useServiceAccountCredentials": false}); strings.Contains(out, role) {
		t.Errorf("without per-controller credentials the daemon may still create ServiceAccounts")
	}
}

// TestControllersAreDisabledByAnyName: the chart knows every name the
// daemon accepts for a controller (from files/controllers.yaml), so
// disabling node IPAM by an alias while allocateNodeCIDRs is on neither
// adds it back to --controllers (the daemon refuses a controller both
// enabled and disabled) nor renders its RBAC.
func TestControllersAreDisabledByAnyName(t *testing.T) {
	for _, disable := range []string{"-node-ipam", "-nodeipam", "-node-ipam-controller"} {
		t.Run(disable, func(t *testing.T) {
			out, err := chart.Render(chartDir, chart.Options{Values: map[string]any{
				"controllers": []any{"*", disable}, "allocateNodeCIDRs": true, "clusterCIDR": "10.244.0.0/16"}})
			if err != nil {
				t.Fatal(err)
			}
			if want := "- --controllers=*," + disable + "\n"; !strings.Contains(out, want) {
				t.Errorf("renders no %q", want)
			}
			if strings.Contains(out, "stratus:node-ipam-controller") || strings.Contains(out, ",node-ipam-controller") {
				t.Error("renders node IPAM's RBAC or enables it in --controllers")
			}
		})
	}
	out, err := chart.Render(chartDir, chart.Options{Values: map[string]any{
		"controllers": []any{"*", "node-ipam"}, "allocateNodeCIDRs": true, "clusterCIDR": "10.244.0.0/16"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "- --controllers=*,node-ipam\n") || !strings.Contains(out, "name: stratus:node-ipam-controller\n") {
		t.Error("node IPAM named by its alias: want --controllers=*,node-ipam and its RBAC")
	}
}

// TestTemplatesNameNoController: the controllers, their names and their
// ServiceAccounts are the daemon's table's, which `make manifests` writes
// into files/controllers.yaml; a template that named one itself would be a
// second table, free to drift from the first.
func TestTemplatesNameNoController(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "files", "controllers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Controllers map[string]struct {
			Aliases        []string `json:"aliases"`
			ServiceAccount string   `json:"serviceAccount"`
		} `json:"controllers"`
	}
	if err := yaml.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, c := range table.Controllers {
		names = append(append(names, name, c.ServiceAccount), c.Aliases...)
	}
	if len(names) < 15 {
		t.Fatalf("files/controllers.yaml names %v; want the daemon's five controllers", names)
	}
	templates, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range templates {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.Contains(string(b), `"`+n+`"`) {
				t.Errorf("%s names the controller %q; the chart's controllers come from files/controllers.yaml", filepath.Base(path), n)
			}
		}
	}
}
