package vendors_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestUpdateOnlyRoleBesideUpstream runs both implementations under
// kube-vip's published role, which grants nodes get, list, watch and
// update but neither patch nor nodes/status, with a provider that has
// instances: kube-vip's own has none, so its manifest runs no node
// controller, but a role written after it meets providers that do (here
// hcloud's double, by kube-vip's args with --cloud-provider=hcloud and
// hcloud's token). Upstream's node controller writes the Node with an
// update and only logs its refused address patch, so it initializes the
// Node; Stratus must too, the same way (providerID, labels, the Synced
// event), leaving the Node's addresses to the kubelet as upstream does.
func TestUpdateOnlyRoleBesideUpstream(t *testing.T) {
	binDir := testbed.RequireBinaries(t, "kube-apiserver", "etcd", "upstream-ccm")
	stratus := buildVendorCCM(t)
	env := testbed.Start(t)
	ctx := testbed.Context(t, 4*time.Minute)
	const vendor, file = "kube-vip", "kube-vip-cloud-controller"
	rbac := vendorRBAC(t, vendor, file)
	if !grantsUpdateNotPatch(t, rbac) {
		t.Fatalf("%s's role no longer grants nodes update without patch", vendor)
	}
	if err := deploy.Apply(ctx, env.Config, rbac, deploy.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	ctr := vendorContainer(t, vendor, file)
	args, _ := inImage(ctr)
	pd := podFor(ctx, t, env, ctr, append(args, "--cloud-provider=hcloud"))
	pd.env["HCLOUD_TOKEN"] = hcloudSecrets()["hcloud"]["token"]
	// The node controller's outcome as the profile test reads it, under
	// kube-vip's Lease; vendor names the provider whose controllers start.
	c := swap{vendor: "hcloud", lease: "kube-vip-cloud-controller", initializes: true}
	upstream := c.outcome(ctx, t, env, "upstream", vendorBinary(t, vendor, filepath.Join(binDir, "upstream-ccm")), pd)
	ours := c.outcome(ctx, t, env, "stratus", vendorBinary(t, vendor, stratus), pd)
	if upstream.node == "" || strings.HasPrefix(upstream.node, " ") {
		t.Fatalf("upstream initialized the Node as %q, want a providerID", upstream.node)
	}
	compareOutcomes(t, ours, upstream)
	t.Logf("both initialized the Node under %s's role: %q, event %q", vendor, ours.node, ours.events)
}

// grantsUpdateNotPatch reports whether the role grants update on nodes and
// neither patch nor a wildcard verb, the property this test is about.
func grantsUpdateNotPatch(t *testing.T, objs []*unstructured.Unstructured) bool {
	t.Helper()
	update, patch := false, false
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, err := unstructured.NestedSlice(o.Object, "rules")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			if !hasString(rule["resources"], "nodes") {
				continue
			}
			update = update || hasString(rule["verbs"], "update") || hasString(rule["verbs"], "*")
			patch = patch || hasString(rule["verbs"], "patch") || hasString(rule["verbs"], "*")
		}
	}
	return update && !patch
}

func hasString(list any, s string) bool {
	l, _ := list.([]any)
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}
