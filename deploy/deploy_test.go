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
