package deploy_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/deploy"
)

// checkWorkloads reads back what the API server stored for the default
// Deployment and the DaemonSet and checks the shape an install needs: the
// replicas spread across zones under a PodDisruptionBudget, or one pod per
// control-plane node; and in both, the taints a CCM must run under, the
// host network, the priority, the restricted security context, resources,
// HTTPS probes on the secure port and the cloud config from its Secret.
func checkWorkloads(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	d, err := cs.AppsV1().Deployments(deploy.Namespace).Get(ctx, "stratus", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("Deployment replicas = %v, want 2", d.Spec.Replicas)
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	if !slices.ContainsFunc(d.Spec.Template.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		return c.TopologyKey == corev1.LabelTopologyZone && c.MaxSkew == 1 && err == nil && sel.Matches(podLabels)
	}) {
		t.Errorf("Deployment topologySpreadConstraints = %+v, want one across %s selecting its pods",
			d.Spec.Template.Spec.TopologySpreadConstraints, corev1.LabelTopologyZone)
	}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(deploy.Namespace).Get(ctx, "stratus", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PodDisruptionBudget: %v", err)
	}
	if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || !sel.Matches(podLabels) ||
		pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget %+v: want minAvailable 1 over the Deployment's pods", pdb.Spec)
	}
	checkPodSpec(t, "Deployment", &d.Spec.Template.Spec)

	ds, err := cs.AppsV1().DaemonSets(deploy.Namespace).Get(ctx, "stratus", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ds.Spec.Template.Spec.NodeSelector["node-role.kubernetes.io/control-plane"]; !ok {
		t.Errorf("DaemonSet nodeSelector = %v, want the control-plane nodes", ds.Spec.Template.Spec.NodeSelector)
	}
	checkPodSpec(t, "DaemonSet", &ds.Spec.Template.Spec)
}

func checkPodSpec(t *testing.T, kind string, spec *corev1.PodSpec) {
	t.Helper()
	for _, taint := range []corev1.Taint{
		{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
	} {
		if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &taint, false) }) {
			t.Errorf("%s tolerations %+v do not tolerate %s", kind, spec.Tolerations, taint.ToString())
		}
	}
	if !spec.HostNetwork || spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("%s hostNetwork %t, priorityClassName %q; want true and system-cluster-critical", kind, spec.HostNetwork, spec.PriorityClassName)
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s pod securityContext = %+v, want runAsNonRoot and RuntimeDefault seccomp", kind, psc)
	}
	c := spec.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s container securityContext = %+v, want a read-only root, no privilege escalation, ALL dropped", kind, sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s resources = %+v, want CPU and memory requests and a memory limit", kind, c.Resources)
	}
	for probe, want := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Scheme != corev1.URISchemeHTTPS ||
			!slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
				return p.ContainerPort == 10258 && (probe.HTTPGet.Port.StrVal == p.Name || probe.HTTPGet.Port.IntValue() == 10258)
			}) {
			t.Errorf("%s probe %+v, want HTTPS GET %s on port 10258", kind, probe, want)
		}
	}
	checkCloudConfig(t, kind, spec)
}

// checkCloudConfig: --cloud-config names a file of the Secret's volume,
// mounted read-only.
func checkCloudConfig(t *testing.T, kind string, spec *corev1.PodSpec) {
	t.Helper()
	c := spec.Containers[0]
	vol := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "cloud-config" })
	if vol < 0 {
		t.Errorf("%s volumes %+v: no Secret cloud-config", kind, spec.Volumes)
		return
	}
	mount := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == spec.Volumes[vol].Name })
	if mount < 0 || !c.VolumeMounts[mount].ReadOnly {
		t.Errorf("%s mounts %+v: the cloud config Secret is not mounted read-only", kind, c.VolumeMounts)
		return
	}
	if want := "--cloud-config=" + c.VolumeMounts[mount].MountPath + "/cloud.conf"; !slices.Contains(c.Args, want) {
		t.Errorf("%s args %v lack %s", kind, c.Args, want)
	}
}

// checkRestrictedPodSecurity submits the Deployment's pod, as rendered, to
// a namespace enforcing the "restricted" Pod Security Standard (a dry run:
// nothing is stored). Its security context passes; only the host network
// (and the host port it implies), which a CCM needs before the pod network
// exists, does not, so the install's namespace (kube-system) must allow
// host namespaces.
func checkRestrictedPodSecurity(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	const ns = "restricted"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	objs, err := deploy.Objects(deploy.Default)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Deployment" })
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[i].Object, &d); err != nil {
		t.Fatal(err)
	}
	pod := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stratus"}, Spec: *d.Spec.Template.Spec.DeepCopy()}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod(), dryRun)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "hostNetwork") {
		t.Fatalf("the pod as rendered in a restricted namespace: %v, want forbidden for hostNetwork alone", err)
	}
	if msg := err.Error(); strings.Contains(msg, "runAsNonRoot") || strings.Contains(msg, "capabilities") ||
		strings.Contains(msg, "seccompProfile") || strings.Contains(msg, "allowPrivilegeEscalation") {
		t.Errorf("the pod's security context falls short of restricted: %v", err)
	}
	p := pod()
	p.Spec.HostNetwork = false
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, dryRun); err != nil {
		t.Errorf("the pod without hostNetwork in a restricted namespace: %v", err)
	}
}
