package vendors_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestChartInstallsBesideAnUpstreamCCM installs, with the helm CLI into a
// real API server, an upstream-based CCM's release first (a chart made of
// AWS' published RBAC: the ServiceAccount kube-system/cloud-controller-manager
// and its roles), and a controller ServiceAccount another CCM created by
// hand; then charts/stratus beside them. With the default ServiceAccount
// name Helm refuses (the object belongs to the other release), which is
// why the name is a value; with a name of the operator's choice the
// install succeeds, leaves the other release's objects as they were, runs
// the workload as that ServiceAccount, uses the existing controller
// ServiceAccount rather than taking it over, and prints the Secret the
// install still needs.
func TestChartInstallsBesideAnUpstreamCCM(t *testing.T) {
	helm := filepath.Join(testbed.RequireBinaries(t, "helm"), "helm")
	env := testbed.Start(t)
	ctx := testbed.Context(t, 3*time.Minute)
	run := helmCLI(ctx, t, env, helm)
	if out, err := run("install", "upstream-ccm", upstreamChart(t)); err != nil {
		t.Fatalf("helm install upstream-ccm: %v\n%s", err, out)
	}
	// kube-controller-manager, run with per-controller credentials,
	// creates it.
	const handMade = "node-controller"
	if _, err := env.Clientset.CoreV1().ServiceAccounts("kube-system").Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: handMade}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	const chart = "../../charts/stratus"
	out, err := run("install", "stratus", chart)
	if err == nil || !strings.Contains(out, `ServiceAccount "cloud-controller-manager" in namespace "kube-system" exists`) {
		t.Fatalf("helm install with the default ServiceAccount name beside upstream-ccm: %v\n%s\nwant a refusal naming the ServiceAccount", err, out)
	}
	out, err = run("install", "stratus", chart, "--set", "serviceAccount.name=stratus-ccm")
	if err != nil {
		t.Fatalf("helm install with serviceAccount.name=stratus-ccm: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Secret kube-system/cloud-config, key cloud.conf") {
		t.Errorf("helm install printed\n%s\nwithout the Secret the install needs", out)
	}
	checkInstalledBeside(ctx, t, env, handMade)
}

// helmCLI returns a runner of the helm CLI against env, in kube-system,
// with its own cache, config and data directories.
func helmCLI(ctx context.Context, t *testing.T, env *testbed.Env, helm string) func(args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(env.Config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", kubeconfig, "-n", "kube-system")...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
			"HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

func checkInstalledBeside(ctx context.Context, t *testing.T, env *testbed.Env, handMade string) {
	t.Helper()
	sas := env.Clientset.CoreV1().ServiceAccounts("kube-system")
	for name, release := range map[string]string{"cloud-controller-manager": "upstream-ccm", "stratus-ccm": "stratus", handMade: ""} {
		sa, err := sas.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := sa.Annotations["meta.helm.sh/release-name"]; got != release {
			t.Errorf("ServiceAccount %s belongs to release %q, want %q", name, got, release)
		}
	}
	d, err := env.Clientset.AppsV1().Deployments("kube-system").Get(ctx, "stratus", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "stratus-ccm" {
		t.Errorf("the Deployment runs as %q, want stratus-ccm", sa)
	}
	// The controller roles are the chart's, bound to the existing
	// ServiceAccount as to the ones it created.
	for _, ctl := range []string{"cloud-node-controller", "cloud-node-lifecycle-controller"} {
		b, err := env.Clientset.RbacV1().ClusterRoleBindings().Get(ctx, "stratus:"+ctl, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Subjects) != 1 || b.Subjects[0].Name != handMade || b.Subjects[0].Namespace != "kube-system" {
			t.Errorf("ClusterRoleBinding stratus:%s subjects %+v, want kube-system/%s", ctl, b.Subjects, handMade)
		}
	}
}

// upstreamChart is a chart of an upstream-based CCM's RBAC: AWS' published
// ServiceAccount, ClusterRole and bindings, as its release would install
// them.
func upstreamChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "upstream-ccm")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	chart := "apiVersion: v2\nname: upstream-ccm\nversion: 0.1.0\n"
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(chart), 0o600); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/aws/*.rbac.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata/aws/*.rbac.yaml: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "templates", filepath.Base(f)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// valuesFile sets every pass-through value of the chart, as an operator's
// values file for a provider that reads credentials from the environment
// and a cluster with the Prometheus Operator would.
const valuesFile = `serviceAccount:
  name: stratus-ccm
  annotations:
    eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/stratus
cloudConfig:
  secretName: ""
extraEnv:
  - name: HCLOUD_TOKEN
    valueFrom:
      secretKeyRef: {name: hcloud, key: token}
envFrom:
  - secretRef: {name: provider-env}
extraVolumes:
  - name: ca
    configMap: {name: cloud-ca}
extraVolumeMounts:
  - {name: ca, mountPath: /etc/cloud-ca, readOnly: true}
removeArgs: [--cluster-name]
extraArgs: [--v=2]
serviceMonitor: {enabled: true}
podMonitor: {enabled: true}
`

// TestChartValuesApplyStrictly renders the chart with helm template and
// every pass-through value set, and server-side applies the result to a
// real API server with strict field validation (the monitors against the
// Prometheus Operator's CRDs): a value rendered into a wrong place or
// shape is refused, not dropped. Then it reads the stored Deployment back.
func TestChartValuesApplyStrictly(t *testing.T) {
	helm := filepath.Join(testbed.RequireBinaries(t, "helm"), "helm")
	env := testbed.Start(t)
	ctx := testbed.Context(t, 2*time.Minute)
	dir := t.TempDir()
	values := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(values, []byte(valuesFile), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, helm, "template", "stratus", "../../charts/stratus", "-n", "kube-system", "-f", values)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs, err := deploy.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	var crds []*unstructured.Unstructured
	for _, f := range []string{"servicemonitors", "podmonitors"} {
		data, err := os.ReadFile("../../deploy/testdata/monitoring.coreos.com_" + f + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		c, err := deploy.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, c...)
	}
	if err := deploy.Apply(ctx, env.Config, crds, deploy.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	// The monitors' kinds appear in discovery once the CRDs are established.
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := deploy.Apply(ctx, env.Config, objs, deploy.ApplyOptions{})
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := env.Clientset.AppsV1().Deployments("kube-system").Get(ctx, "stratus", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	switch {
	case spec.ServiceAccountName != "stratus-ccm":
		t.Errorf("serviceAccountName %q, want stratus-ccm", spec.ServiceAccountName)
	// POD_NAME and POD_NAMESPACE (the chart's own, for the leader's pod
	// mark), then extraEnv.
	case len(c.Env) != 3 || c.Env[0].Name != "POD_NAME" || c.Env[1].Name != "POD_NAMESPACE" ||
		c.Env[2].ValueFrom == nil || c.Env[2].ValueFrom.SecretKeyRef == nil || c.Env[2].ValueFrom.SecretKeyRef.Name != "hcloud":
		t.Errorf("env %+v, want POD_NAME, POD_NAMESPACE, then HCLOUD_TOKEN from the Secret hcloud", c.Env)
	case len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "provider-env":
		t.Errorf("envFrom %+v, want the Secret provider-env", c.EnvFrom)
	case len(spec.Volumes) != 1 || spec.Volumes[0].ConfigMap == nil || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/cloud-ca":
		t.Errorf("volumes %+v, mounts %+v, want only the ConfigMap cloud-ca at /etc/cloud-ca", spec.Volumes, c.VolumeMounts)
	case slices.ContainsFunc(c.Args, func(a string) bool {
		return strings.HasPrefix(a, "--cluster-name") || strings.HasPrefix(a, "--cloud-config")
	}):
		t.Errorf("args %v hold a removed argument", c.Args)
	case c.Args[len(c.Args)-1] != "--v=2":
		t.Errorf("args %v do not end with the extra --v=2", c.Args)
	}
	sa, err := env.Clientset.CoreV1().ServiceAccounts("kube-system").Get(ctx, "stratus-ccm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa.Annotations["eks.amazonaws.com/role-arn"] == "" {
		t.Errorf("ServiceAccount stratus-ccm annotations %v, want the IRSA role", sa.Annotations)
	}
}
