package chart_test

import (
	"strings"
	"testing"

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
