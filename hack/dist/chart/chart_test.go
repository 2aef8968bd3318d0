package chart_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratus-ccm/stratus/hack/dist/chart"
)

const (
	chartDir  = "../../../charts/stratus"
	deployDir = "../../../deploy"
)

var modes = map[string]map[string]any{
	"Deployment": nil,
	"DaemonSet":  {"kind": "DaemonSet"},
	"everything": {
		"kind": "Deployment", "replicas": 3, "serviceMonitor": map[string]any{"enabled": true},
		"cloudConfig":       map[string]any{"create": true, "secretName": "cc", "data": "url: http://10.0.0.1:8787\n"},
		"allocateNodeCIDRs": true, "configureCloudRoutes": true, "clusterCIDR": "10.244.0.0/16,fd00:10:244::/56",
		"loadBalancerClass": "example.com/lb", "extraArgs": []any{"--v=2"},
		"image": map[string]any{"repository": "registry.example/stratus", "digest": "sha256:" + strings.Repeat("ab", 32)},
	},
}

func TestChartLintsInEveryMode(t *testing.T) {
	for name, vals := range modes {
		t.Run(name, func(t *testing.T) {
			if err := chart.Lint(chartDir, vals); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestChartRendersEachMode(t *testing.T) {
	for name, want := range map[string][]string{
		"Deployment": {"kind: Deployment", "replicas: 2", "kind: PodDisruptionBudget", "topology.kubernetes.io/zone",
			"--use-service-account-credentials=true", "--leader-elect=true", "path: /readyz", "scheme: HTTPS",
			"containerPort: 10258", "priorityClassName: \"system-cluster-critical\"", "hostNetwork: true",
			"node.cloudprovider.kubernetes.io/uninitialized", "--cloud-config=/etc/stratus/cloud-config/cloud.conf"},
		"DaemonSet": {"kind: DaemonSet", "node-role.kubernetes.io/control-plane: \"\""},
		"everything": {"replicas: 3", "kind: ServiceMonitor", "nonResourceURLs: [\"/metrics\", \"/configz\"]", "kind: Secret",
			"--allocate-node-cidrs=true", "--configure-cloud-routes=true", "--cluster-cidr=10.244.0.0/16,fd00:10:244::/56",
			"--controllers=*,node-ipam-controller", "--load-balancer-class=example.com/lb", "- --v=2", "image: registry.example/stratus@sha256:abab", "checksum/cloud-config:"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := chart.Render(chartDir, chart.Options{Values: modes[name]})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("rendered %s lacks %q", name, w)
				}
			}
		})
	}
	out, err := chart.Render(chartDir, chart.Options{Values: modes["DaemonSet"]})
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"PodDisruptionBudget", "topologySpreadConstraints", "replicas:", "ServiceMonitor", "dnsPolicy"} {
		if strings.Contains(out, absent) {
			t.Errorf("DaemonSet mode renders %s", absent)
		}
	}
}

// TestValuesAreValidated: a wrong value fails rendering with the field named.
func TestValuesAreValidated(t *testing.T) {
	for field, vals := range map[string]map[string]any{
		"/kind":                          {"kind": "StatefulSet"},
		"/replicas":                      {"replicas": "two"},
		"/hostNetwork":                   {"hostNetwork": "yes"},
		"/image/pullPolicy":              {"image": map[string]any{"pullPolicy": "Sometimes"}},
		"/image/digest":                  {"image": map[string]any{"digest": "latest"}},
		"/securePort":                    {"securePort": 70000},
		"/extraArgs/0":                   {"extraArgs": []any{"v=2"}},
		"/clusterCIDR":                   {"allocateNodeCIDRs": true},
		"/serviceMonitor/enable":         {"serviceMonitor": map[string]any{"enable": true}},
		"/podMonitor/interval":           {"podMonitor": map[string]any{"interval": "often"}},
		"/serviceAccount/name":           {"serviceAccount": map[string]any{"name": "Not_A_Name"}},
		"/removeArgs/0":                  {"removeArgs": []any{"cluster-name"}},
		"/extraEnv/0/name":               {"extraEnv": []any{map[string]any{"value": "x"}}},
		"/extraVolumes/0/name":           {"extraVolumes": []any{map[string]any{"name": "cloud-config", "emptyDir": map[string]any{}}}},
		"/extraVolumeMounts/0/mountPath": {"extraVolumeMounts": []any{map[string]any{"name": "ca", "mountPath": "relative"}}},
		"/metrics/authorization":         {"metrics": map[string]any{"authorization": map[string]any{"token": "x"}}},
	} {
		t.Run(field, func(t *testing.T) {
			_, err := chart.Render(chartDir, chart.Options{Values: vals})
			if err == nil {
				t.Fatalf("values %v rendered", vals)
			}
			name := field[strings.LastIndex(field, "/")+1:]
			if !strings.Contains(err.Error(), name) {
				t.Errorf("values %v: error %q does not name %s", vals, err, name)
			}
		})
	}
}

// TestDeployIsRenderedFromTheChart keeps deploy/ equal to the chart: each
// variant's file as the chart renders it, and no manifest beside them (one
// a removed variant left behind would still be applied by users).
func TestDeployIsRenderedFromTheChart(t *testing.T) {
	tmp := t.TempDir()
	if err := chart.WriteManifests(chartDir, tmp); err != nil {
		t.Fatal(err)
	}
	variants := map[string]bool{}
	for _, v := range chart.Variants() {
		variants[v.File] = true
	}
	err := filepath.WalkDir(deployDir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		rel, err := filepath.Rel(deployDir, path)
		if err != nil {
			return err
		}
		if ext := filepath.Ext(rel); (ext == ".yaml" || ext == ".yml" || ext == ".json") && !variants[filepath.ToSlash(rel)] {
			t.Errorf("deploy/%s is not rendered from the chart (chart.Variants); remove it or add its variant", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range chart.Variants() {
		want, err := os.ReadFile(filepath.Join(tmp, v.File))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(deployDir, v.File))
		if err != nil {
			t.Fatalf("%v; run `make manifests`", err)
		}
		if string(got) != string(want) {
			t.Errorf("deploy/%s differs from what charts/stratus renders; run `make manifests`", v.File)
		}
	}
}
