package deploy_test

import (
	"slices"
	"testing"

	"github.com/stratus-ccm/stratus/deploy"
)

func TestRBACHoldsTheDaemonsIdentity(t *testing.T) {
	objs, err := deploy.RBAC()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	for _, want := range []string{"ServiceAccount/cloud-controller-manager", "ClusterRole/stratus:cloud-controller-manager",
		"ClusterRoleBinding/stratus:cloud-controller-manager", "Role/stratus:leader-election", "RoleBinding/stratus:leader-election"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("RBAC() = %v, missing %s", kinds, want)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			t.Errorf("RBAC() returned a %s", o.GetKind())
		}
	}
}

func TestParseRejectsADocumentWithoutKind(t *testing.T) {
	_, err := deploy.Parse([]byte("---\napiVersion: v1\nmetadata: {name: x}\n"))
	if err == nil {
		t.Fatal("Parse accepted a document without kind")
	}
}

// TestNoSharedServiceAccountIsDeclared: `kubectl delete -f` of any
// rendered file must leave the controllers' ServiceAccounts, which
// kube-controller-manager (node-controller) or another cloud controller
// manager shares: no file declares them (the daemon creates a missing one).
func TestNoSharedServiceAccountIsDeclared(t *testing.T) {
	shared := []string{"node-controller", "service-controller", "route-controller"}
	for _, name := range []string{deploy.Default, deploy.DaemonSet, deploy.Monitoring, deploy.AllControllersRBAC} {
		objs, err := deploy.Objects(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() == "ServiceAccount" && slices.Contains(shared, o.GetName()) {
				t.Errorf("%s declares the ServiceAccount %s/%s: deleting the file would delete it", name, o.GetNamespace(), o.GetName())
			}
		}
	}
}
