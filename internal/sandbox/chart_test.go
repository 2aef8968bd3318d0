package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stratus-ccm/stratus/deploy"
)

// The RBAC the sandbox applies carries the annotations with which Helm
// adopts an existing object into the release `stratus` in kube-system,
// and nothing else of it changes.
func TestRBACAdoptableByHelm(t *testing.T) {
	manifest, err := deploy.Manifest(deploy.AllControllersRBAC)
	if err != nil {
		t.Fatal(err)
	}
	want, err := deploy.Parse(manifest)
	if err != nil {
		t.Fatal(err)
	}
	out, err := adoptableByHelm(manifest)
	if err != nil {
		t.Fatal(err)
	}
	got, err := deploy.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d objects after, %d before", len(got), len(want))
	}
	for i, o := range got {
		a := o.GetAnnotations()
		if a["meta.helm.sh/release-name"] != "stratus" || a["meta.helm.sh/release-namespace"] != "kube-system" ||
			o.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s %s: annotations %v, labels %v", o.GetKind(), o.GetName(), a, o.GetLabels())
		}
		o.SetAnnotations(want[i].GetAnnotations())
		if !equalJSON(t, o.Object, want[i].Object) {
			t.Errorf("%s %s changed beyond its annotations", o.GetKind(), o.GetName())
		}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := yaml.Marshal(a)
	y, err2 := yaml.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(x) == string(y)
}

// The values file is what helm install needs on the real nodes, and the
// env file names it with the nodes' sockets only once it is written.
func TestChartValues(t *testing.T) {
	o := DefaultOptions()
	o.RealNodes, o.APIServerPort, o.LocalcloudPort, o.CCMArgs = 1, 26443, 28787, []string{"--v=2"}
	s := &sandbox{o: o, state: t.TempDir(), lcToken: "lc-token"}
	if err := s.writeChartValues(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(s.state, ChartValuesFile))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Image       map[string]string `json:"image"`
		Replicas    int               `json:"replicas"`
		CloudConfig struct {
			Create bool   `json:"create"`
			Data   string `json:"data"`
		} `json:"cloudConfig"`
		ClusterName  string              `json:"clusterName"`
		AllocateCIDR bool                `json:"allocateNodeCIDRs"`
		Routes       bool                `json:"configureCloudRoutes"`
		ClusterCIDR  string              `json:"clusterCIDR"`
		ExtraArgs    []string            `json:"extraArgs"`
		ExtraEnv     []map[string]string `json:"extraEnv"`
		NodeSelector map[string]string   `json:"nodeSelector"`
	}
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	wantData := "url: http://127.0.0.1:28787\ntoken: lc-token\nclusterName: sandbox\n"
	if v.Image["pullPolicy"] != "Never" || v.Replicas != 1 || !v.CloudConfig.Create || v.CloudConfig.Data != wantData ||
		v.ClusterName != clusterName || !v.AllocateCIDR || !v.Routes || v.ClusterCIDR != o.ClusterCIDR || len(v.ExtraArgs) != 1 ||
		v.NodeSelector[RealNodeLabel] != "true" || len(v.ExtraEnv) != 2 || v.ExtraEnv[1]["value"] != "26443" {
		t.Errorf("values:\n%s", b)
	}
	// No real node started here: no sockets, so nothing to import into and
	// no chart lines in the env file.
	env, err := os.ReadFile(filepath.Join(s.state, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if s.chartEnv() != "" || len(env) == 0 {
		t.Errorf("env file without real nodes:\n%s", env)
	}
	s.nodeSockets = []string{"/a/real-01/containerd.sock", "/a/real-02/containerd.sock"}
	want := `export STRATUS_REAL_NODE_SOCKETS="/a/real-01/containerd.sock /a/real-02/containerd.sock"`
	if got := s.chartEnv(); !strings.Contains(got, want) || !strings.Contains(got, "STRATUS_CHART_VALUES=") {
		t.Errorf("chart lines with real nodes' sockets:\n%s\nwant %s", got, want)
	}
}
