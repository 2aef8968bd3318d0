package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestDefaultManifestRunsStratus installs deploy/stratus.yaml as a user
// would (the cloud config Secret, then the manifest) and runs the stratus
// binary as the Deployment's pods would: one process per replica, each with
// the container's arguments as rendered, as the manifest's ServiceAccount,
// under the manifest's RBAC only. kwok runs no containers, so the pod's
// environment is supplied by hand, and only it: the ServiceAccount's token
// in a kubeconfig (in a pod, the in-cluster config), the Secret's file in a
// directory standing in for its volume, and the secure port on loopback at
// a free port (in a pod, 10258 on its node). Then every replica, the
// standby too, answers the kubelet's probes without credentials, so the
// Deployment would become Ready; a Node is initialized; and a LoadBalancer
// Service gets its load balancer, which goes when the Service does.
func TestDefaultManifestRunsStratus(t *testing.T) {
	env := testbed.Start(t)
	env.StartKwok(t)
	ctx := testbed.Context(t, 4*time.Minute)
	knobs := api.DefaultKnobs()
	knobs.LBProvisioningTime = api.Duration(100 * time.Millisecond)
	knobs.LBDeletionTime = api.Duration(100 * time.Millisecond)
	lc := servicetest.StartCloud(t, knobs, servicetest.CloudOptions{})

	objs, err := deploy.Objects(deploy.Default)
	if err != nil {
		t.Fatal(err)
	}
	d := manifestDeployment(t, objs)
	container := d.Spec.Template.Spec.Containers[0]
	installManifest(ctx, t, env, lc, objs, d)
	args := podArgs(ctx, t, env, d)

	bin := imageEntrypoint(t)
	ports := map[int]*testbed.Process{}
	for i := range int(*d.Spec.Replicas) {
		port := testbed.FreePort(t)
		ports[port] = testbed.StartProcess(t, filepath.Join(t.TempDir(), fmt.Sprintf("replica-%d.log", i)), bin,
			append(slices.Clone(args), "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))...)
	}
	if len(ports) < 2 {
		t.Fatalf("the Deployment has %d replicas, want a leader and a standby", len(ports))
	}
	r := &run{t: t, ctx: ctx, cs: env.Clientset, lc: lc}
	r.poll("every replica answering the kubelet's probes", func(ctx context.Context) (bool, error) {
		for port, p := range ports {
			if p.Exited() {
				log, _ := os.ReadFile(p.LogFile)
				return false, fmt.Errorf("stratus %v exited:\n%s", args, log)
			}
			if probe(ctx, port, container.LivenessProbe) != http.StatusOK || probe(ctx, port, container.ReadinessProbe) != http.StatusOK {
				return false, nil
			}
		}
		return true, nil
	})
	checkInitialized(r)
	r.loadBalancer()
}

// imageEntrypoint is the stratus binary as the image's entrypoint runs it:
// through the cloud-controller-manager symlink, so that it is the daemon and
// a container's args are its flags alone, as in every upstream-based CCM
// image.
func imageEntrypoint(t *testing.T) string {
	t.Helper()
	bin := buildStratus(t)
	link := filepath.Join(filepath.Dir(bin), "cloud-controller-manager")
	if err := os.Symlink(filepath.Base(bin), link); err != nil {
		t.Fatal(err)
	}
	return link
}

// manifestDeployment returns the manifest's Deployment.
func manifestDeployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Deployment" })
	if i < 0 {
		t.Fatalf("%s holds no Deployment", deploy.Default)
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[i].Object, &d); err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || len(spec.Containers) != 1 || len(spec.Volumes) != 1 || spec.Volumes[0].Secret == nil || len(spec.Containers[0].VolumeMounts) != 1 {
		t.Fatalf("the Deployment: %+v, want replicas, one container and the cloud config Secret's volume", d.Spec)
	}
	return &d
}

// flagValue is the value of --name= in args.
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	t.Fatalf("the manifest's args %v lack --%s", args, name)
	return ""
}

// installManifest creates the cloud config Secret, as install.md's step 2
// does, and applies the manifest.
func installManifest(ctx context.Context, t *testing.T, env *testbed.Env, lc *servicetest.Cloud, objs []*unstructured.Unstructured, d *appsv1.Deployment) {
	t.Helper()
	args := d.Spec.Template.Spec.Containers[0].Args
	cloudConfig := "url: " + lc.Server.URL() + "\ntoken: " + lc.Server.Token() + "\nclusterName: " + flagValue(t, args, "cluster-name") + "\n"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: deploy.Namespace, Name: d.Spec.Template.Spec.Volumes[0].Secret.SecretName},
		Data: map[string][]byte{filepath.Base(flagValue(t, args, "cloud-config")): []byte(cloudConfig)}}
	if _, err := env.Clientset.CoreV1().Secrets(deploy.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := deploy.Apply(ctx, env.Config, objs, deploy.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podArgs are the container's arguments in the environment a pod of d
// would have: the Secret's files in a directory for its volume, and a
// kubeconfig holding the ServiceAccount's token for the in-cluster config.
func podArgs(ctx context.Context, t *testing.T, env *testbed.Env, d *appsv1.Deployment) []string {
	t.Helper()
	spec := d.Spec.Template.Spec
	dir := t.TempDir()
	volume := filepath.Join(dir, "cloud-config")
	if err := os.Mkdir(volume, 0o700); err != nil {
		t.Fatal(err)
	}
	stored, err := env.Clientset.CoreV1().Secrets(deploy.Namespace).Get(ctx, spec.Volumes[0].Secret.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key, data := range stored.Data {
		if err := os.WriteFile(filepath.Join(volume, key), data, 0o400); err != nil {
			t.Fatal(err)
		}
	}
	mountPath := spec.Containers[0].VolumeMounts[0].MountPath
	args := slices.Clone(spec.Containers[0].Args)
	for i, a := range args {
		args[i] = strings.Replace(a, "--cloud-config="+mountPath+"/", "--cloud-config="+volume+"/", 1)
	}
	saCfg, err := localcluster.ServiceAccountConfig(ctx, env.Config, deploy.Namespace, spec.ServiceAccountName, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(saCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return append(args, "--kubeconfig="+kubeconfig)
}

// probe runs an HTTPS GET probe the way the kubelet does: no credentials,
// the serving certificate not verified.
func probe(ctx context.Context, port int, p *corev1.Probe) int {
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		return 0
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // as the kubelet's prober
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+p.HTTPGet.Path, nil)
	if err != nil {
		return 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// checkInitialized: a kwok Node of a cloud instance gets its providerID
// and loses the uninitialized taint.
func checkInitialized(r *run) {
	r.t.Helper()
	if _, err := r.lc.Client.CreateInstance(r.ctx, api.CreateInstanceRequest{Name: "worker", Zone: "zone-a", Region: "region-1", Type: "small"}); err != nil {
		r.t.Fatal(err)
	}
	if _, err := localcluster.CreateNode(r.ctx, r.cs, "worker", localcluster.NodeOptions{}); err != nil {
		r.t.Fatal(err)
	}
	r.poll("node worker initialized", func(ctx context.Context) (bool, error) {
		n, err := r.cs.CoreV1().Nodes().Get(ctx, "worker", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
		return n.Spec.ProviderID != "" && !tainted, nil
	})
}
