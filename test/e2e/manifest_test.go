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
	"github.com/stratus-ccm/stratus/pkg/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestDefaultManifestRunsStratus installs deploy/stratus.yaml as a user
// would (the cloud config Secret, then the manifest) and runs the stratus
// binary as its pod would: the container's arguments as rendered, as the
// manifest's ServiceAccount, under the manifest's RBAC only. kwok runs no
// containers, so the pod's environment is supplied by hand, and only it:
// the ServiceAccount's token in a kubeconfig (in a pod, the in-cluster
// config), the Secret's file in a directory standing in for its volume,
// and the secure port on loopback at a free port (in a pod, 10258 on the
// node). Then the kubelet's probes are answered without credentials, a
// Node is initialized, and a LoadBalancer Service gets its load balancer,
// which goes when the Service does.
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
	container, spec := manifestContainer(t, objs)
	args := slices.Clone(container.Args)
	flag := func(name string) string {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		t.Fatalf("the manifest's args %v lack --%s", args, name)
		return ""
	}
	cloudConfig := "url: " + lc.Server.URL() + "\ntoken: " + lc.Server.Token() + "\nclusterName: " + flag("cluster-name") + "\n"
	secretName := spec.Volumes[0].Secret.SecretName
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: deploy.Namespace, Name: secretName},
		Data: map[string][]byte{filepath.Base(flag("cloud-config")): []byte(cloudConfig)}}
	if _, err := env.Clientset.CoreV1().Secrets(deploy.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := deploy.Apply(ctx, env.Config, objs, deploy.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}

	// The pod's environment.
	dir := t.TempDir()
	volume := filepath.Join(dir, "cloud-config")
	if err := os.Mkdir(volume, 0o700); err != nil {
		t.Fatal(err)
	}
	stored, err := env.Clientset.CoreV1().Secrets(deploy.Namespace).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key, data := range stored.Data {
		if err := os.WriteFile(filepath.Join(volume, key), data, 0o400); err != nil {
			t.Fatal(err)
		}
	}
	mountPath := container.VolumeMounts[0].MountPath
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
	port := testbed.FreePort(t)
	args = append(args, "--kubeconfig="+kubeconfig, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))
	p := testbed.StartProcess(t, filepath.Join(dir, "stratus.log"), buildStratus(t), args...)

	r := &run{t: t, ctx: ctx, cs: env.Clientset, lc: lc}
	r.poll("/healthz and /readyz answered to the kubelet's probes", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			log, _ := os.ReadFile(p.LogFile)
			return false, fmt.Errorf("stratus %v exited:\n%s", args, log)
		}
		return probe(ctx, port, container.LivenessProbe) == http.StatusOK && probe(ctx, port, container.ReadinessProbe) == http.StatusOK, nil
	})
	checkInitialized(r)
	r.loadBalancer()
}

// manifestContainer returns the Deployment's container and pod spec.
func manifestContainer(t *testing.T, objs []*unstructured.Unstructured) (corev1.Container, corev1.PodSpec) {
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
	if len(spec.Containers) != 1 || len(spec.Volumes) != 1 || spec.Volumes[0].Secret == nil || len(spec.Containers[0].VolumeMounts) != 1 {
		t.Fatalf("the Deployment's pod: %+v, want one container and the cloud config Secret's volume", spec)
	}
	return spec.Containers[0], spec
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
