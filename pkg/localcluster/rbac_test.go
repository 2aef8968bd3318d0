package localcluster_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// TestRulesReadRolesBindingsAndRareComments reads the chart's rendered RBAC:
// each rule with the users bound to its role and, for a rule only a rare
// path needs, that path from its comment.
func TestRulesReadRolesBindingsAndRareComments(t *testing.T) {
	manifest, err := deploy.Manifest(deploy.AllControllersRBAC)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := localcluster.Rules(manifest)
	if err != nil {
		t.Fatal(err)
	}
	const sa = "system:serviceaccount:kube-system:"
	find := func(role, verb, resource string) localcluster.Rule {
		t.Helper()
		i := slices.IndexFunc(rules, func(r localcluster.Rule) bool {
			return r.Role == role && slices.Contains(r.Verbs, verb) && slices.Contains(r.Resources, resource)
		})
		if i < 0 {
			t.Fatalf("no rule %s %s in %s", verb, resource, role)
		}
		return rules[i]
	}
	del := find("ClusterRole/stratus:cloud-node-lifecycle-controller", "delete", "nodes")
	if !slices.Equal(del.Subjects, []string{sa + "node-controller"}) || del.Rare != "" {
		t.Errorf("lifecycle's delete rule: subjects %v, rare %q", del.Subjects, del.Rare)
	}
	lease := find("Role/kube-system/stratus:leader-election", "update", "leases")
	if lease.Namespace != "kube-system" || !slices.Equal(lease.ResourceNames, []string{"cloud-controller-manager"}) ||
		!slices.Equal(lease.Subjects, []string{sa + "cloud-controller-manager"}) {
		t.Errorf("lease rule: %+v", lease)
	}
	get := find("ClusterRole/stratus:service-lb-controller", "get", "services")
	if !strings.Contains(get.Rare, "--delete-orphaned-load-balancers") {
		t.Errorf("the orphan check's rule has rare path %q", get.Rare)
	}
	tokens := find("Role/kube-system/stratus:controller-tokens", "create", "serviceaccounts/token")
	if !slices.Equal(tokens.ResourceNames, []string{"node-controller", "route-controller", "service-controller"}) {
		t.Errorf("token rule names %v, want upstream's three controller ServiceAccounts", tokens.ResourceNames)
	}
}

func TestRulesRejectsBrokenYAML(t *testing.T) {
	if _, err := localcluster.Rules([]byte("kind: ClusterRole\nrules: [\n")); err == nil {
		t.Fatal("broken YAML accepted")
	}
}
