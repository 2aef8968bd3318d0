package deploy_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestManifestsApplyToAnAPIServer applies every rendered file to a real
// kube-apiserver with strict server-side field validation. The
// ServiceMonitor, PodMonitor and PrometheusRule are validated by the
// Prometheus Operator's own CRDs, which the test installs first
// (deploy/testdata). Then it reads the stored
// workloads back, checks the pod against the restricted Pod Security
// Standard, and asks what each ServiceAccount may do.
func TestManifestsApplyToAnAPIServer(t *testing.T) {
	env := testbed.Start(t)
	ctx := testbed.Context(t, 2*time.Minute)

	for _, name := range []string{deploy.Default, deploy.DaemonSet} {
		objs, err := deploy.Objects(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := deploy.Apply(ctx, env.Config, objs, deploy.ApplyOptions{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	applyMonitoring(ctx, t, env.Config)

	d, err := env.Clientset.AppsV1().Deployments(deploy.Namespace).Get(ctx, "stratus", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--leader-elect=true", "--use-service-account-credentials=true"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("Deployment args %v lack %s", c.Args, arg)
		}
	}
	checkWorkloads(ctx, t, env.Clientset)
	checkRestrictedPodSecurity(ctx, t, env.Clientset)
	checkServiceAccountCan(ctx, t, env.Config)
	checkApplyIsStrict(ctx, t, env.Config)
}

// checkApplyIsStrict proves the validation above can fail: a field the API
// does not know is rejected, not dropped.
func checkApplyIsStrict(ctx context.Context, t *testing.T, cfg *rest.Config) {
	t.Helper()
	objs, err := deploy.Objects(deploy.Default)
	if err != nil {
		t.Fatal(err)
	}
	var dep *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			dep = o
		}
	}
	if err := unstructured.SetNestedField(dep.Object, int64(1), "spec", "replicaz"); err != nil {
		t.Fatal(err)
	}
	err = deploy.Apply(ctx, cfg, []*unstructured.Unstructured{dep}, deploy.ApplyOptions{DryRun: true})
	if err == nil || !strings.Contains(err.Error(), "replicaz") {
		t.Fatalf("Apply of a Deployment with spec.replicaz = %v, want an error naming the field", err)
	}
}

func applyMonitoring(ctx context.Context, t *testing.T, cfg *rest.Config) {
	t.Helper()
	for _, file := range []string{"testdata/monitoring.coreos.com_servicemonitors.yaml", "testdata/monitoring.coreos.com_podmonitors.yaml",
		"testdata/monitoring.coreos.com_prometheusrules.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd, err := deploy.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := deploy.Apply(ctx, cfg, crd, deploy.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := deploy.Objects(deploy.Monitoring)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap"} {
		if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind }) {
			t.Fatalf("%s holds no %s", deploy.Monitoring, kind)
		}
	}
	// The new kinds appear in discovery once the CRDs are established.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := deploy.Apply(ctx, cfg, objs, deploy.ApplyOptions{})
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("%s: %v", deploy.Monitoring, err)
	}
}

// checkServiceAccountCan asks the API server, as the chart's ServiceAccounts,
// what they may do: the bindings must connect each role to its identity,
// and the roles must stop short of what Stratus never does. The daemon
// itself only reads and requests tokens; the controllers write.
func checkServiceAccountCan(ctx context.Context, t *testing.T, cfg *rest.Config) {
	t.Helper()
	const sa = "system:serviceaccount:kube-system:"
	// The controllers run as upstream's ServiceAccounts: node-controller
	// for the node controllers (so it may delete Nodes, as the lifecycle
	// controller does), service-controller for load balancers.
	daemon, nodeCtl, svcCtl := sa+"cloud-controller-manager", sa+"node-controller", sa+"service-controller"
	for _, c := range []struct {
		user string
		attr authorizationv1.ResourceAttributes
		want bool
	}{
		{daemon, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "nodes"}, true},
		{daemon, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes"}, false},
		{daemon, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: deploy.Namespace, Name: "cloud-controller-manager"}, true},
		{daemon, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: deploy.Namespace, Name: "kube-scheduler"}, false},
		{daemon, authorizationv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "kube-system", Name: "node-controller"}, true},
		{daemon, authorizationv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "kube-system", Name: "cloud-node-controller"}, false},
		// The daemon creates a controller's missing ServiceAccount, as
		// upstream's does: the manifests ship none, so that deleting them
		// leaves kube-controller-manager's node-controller and the others
		// a different manager may share.
		{daemon, authorizationv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Namespace: "kube-system"}, true},
		{daemon, authorizationv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Namespace: "default"}, false},
		{daemon, authorizationv1.ResourceAttributes{Verb: "delete", Resource: "serviceaccounts", Namespace: "kube-system", Name: "node-controller"}, false},
		{daemon, authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: deploy.Namespace}, false},
		{nodeCtl, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes"}, true},
		{nodeCtl, authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes"}, true},
		{nodeCtl, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "services", Subresource: "status", Namespace: "default"}, false},
		{svcCtl, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "services", Subresource: "status", Namespace: "default"}, true},
		{svcCtl, authorizationv1.ResourceAttributes{Verb: "delete", Resource: "services", Namespace: "default"}, false},
		{svcCtl, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes"}, false},
	} {
		imp := rest.CopyConfig(cfg)
		imp.Impersonate = rest.ImpersonationConfig{UserName: c.user}
		cs, err := kubernetes.NewForConfig(imp)
		if err != nil {
			t.Fatal(err)
		}
		attr := c.attr
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attr},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.want {
			t.Errorf("%s may %s %s/%s %s/%s: %v, want %v", c.user, attr.Verb, attr.Resource, attr.Subresource,
				attr.Namespace, attr.Name, r.Status.Allowed, c.want)
		}
	}
}
