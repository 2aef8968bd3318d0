package chart_test

import (
	"os/exec"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/stratus-ccm/stratus/hack/dist/chart"
)

// operatorValues are the values an install beside an upstream-based CCM
// and with a provider that reads its credentials from the environment
// uses: each value of the chart's pass-through knobs, set.
var operatorValues = map[string]any{
	"serviceAccount": map[string]any{
		"name":        "stratus-ccm",
		"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/stratus"},
	},
	"cloudConfig": map[string]any{"secretName": ""},
	"extraEnv": []any{map[string]any{"name": "HCLOUD_TOKEN",
		"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "hcloud", "key": "token"}}}},
	"envFrom":           []any{map[string]any{"secretRef": map[string]any{"name": "provider-env"}}},
	"extraVolumes":      []any{map[string]any{"name": "ca", "configMap": map[string]any{"name": "cloud-ca"}}},
	"extraVolumeMounts": []any{map[string]any{"name": "ca", "mountPath": "/etc/cloud-ca", "readOnly": true}},
	"removeArgs":        []any{"--cluster-name", "--use-service-account-credentials"},
	"extraArgs":         []any{"--v=2"},
	"serviceMonitor":    map[string]any{"enabled": true},
	"podMonitor":        map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
	"metrics":           map[string]any{"authorization": map[string]any{"secretName": "prom-token", "key": "t"}},
}

func TestOperatorValuesLintAndRender(t *testing.T) {
	if err := chart.Lint(chartDir, operatorValues); err != nil {
		t.Fatal(err)
	}
	out, err := chart.Render(chartDir, chart.Options{Values: operatorValues})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kind: ServiceAccount\nmetadata:\n  name: stratus-ccm\n",
		"eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/stratus",
		"serviceAccountName: stratus-ccm",
		"- kind: ServiceAccount\n    name: stratus-ccm\n    namespace: kube-system",
		"name: HCLOUD_TOKEN", "secretKeyRef:", "envFrom:", "name: provider-env",
		"mountPath: /etc/cloud-ca", "name: cloud-ca",
		"- --v=2", "kind: PodMonitor", "podMetricsEndpoints:", "release: prom",
		"credentials:\n          name: prom-token\n          key: t",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered lacks %q", want)
		}
	}
	for _, absent := range []string{
		"--cluster-name", "--use-service-account-credentials", "--cloud-config", "name: cloud-config",
		"bearerTokenFile", "metrics-scraper", "name: cloud-controller-manager\n  namespace",
	} {
		if strings.Contains(out, absent) {
			t.Errorf("rendered holds %q", absent)
		}
	}
}

// TestArgsAreTheDaemonsFlags: the image's entrypoint is the daemon, so the
// container's args start with its flags, not a subcommand.
func TestArgsAreTheDaemonsFlags(t *testing.T) {
	out, err := chart.Render(chartDir, chart.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "args:\n            - --cloud-provider=localcloud\n") {
		t.Errorf("the container's args do not start with --cloud-provider:\n%s", out[strings.Index(out, "args:"):][:200])
	}
	if strings.Contains(out, "- controller-manager") {
		t.Error("the container's args hold the controller-manager subcommand")
	}
}

func TestRemoveArgsNamesOnlyTheChartsArgs(t *testing.T) {
	_, err := chart.Render(chartDir, chart.Options{Values: map[string]any{"removeArgs": []any{"--cluster-nam"}}})
	if err == nil || !strings.Contains(err.Error(), "removeArgs: --cluster-nam") || !strings.Contains(err.Error(), "--cluster-name") {
		t.Fatalf("removeArgs [--cluster-nam]: %v, want an error naming it and the chart's args", err)
	}
}

// TestMonitorsScrapeWithAToken: without a Secret of the operator's, the
// chart creates the scraper's ServiceAccount, its token Secret and its
// binding to the reader role, and both monitors present that token.
func TestMonitorsScrapeWithAToken(t *testing.T) {
	out, err := chart.Render(chartDir, chart.Options{Values: map[string]any{"podMonitor": map[string]any{"enabled": true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kind: ServiceAccount\nmetadata:\n  name: stratus-metrics-scraper",
		"kubernetes.io/service-account.name: stratus-metrics-scraper\ntype: kubernetes.io/service-account-token",
		"subjects:\n  - kind: ServiceAccount\n    name: stratus-metrics-scraper",
		"kind: PodMonitor", "credentials:\n          name: stratus-metrics-scraper\n          key: token",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered lacks %q", want)
		}
	}
	if strings.Contains(out, "kind: ServiceMonitor") || strings.Contains(out, "-metrics\n") {
		t.Error("a PodMonitor alone renders a ServiceMonitor or the metrics Service")
	}
}

func TestNotesNameTheSecretTheInstallNeeds(t *testing.T) {
	notes, err := chart.Notes(chartDir, chart.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Secret kube-system/cloud-config, key cloud.conf",
		"kubectl -n kube-system create secret generic cloud-config --from-file=cloud.conf=./cloud.conf",
		"ServiceAccount kube-system/cloud-controller-manager"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
	notes, err = chart.Notes(chartDir, chart.Options{Values: map[string]any{
		"cloudConfig": map[string]any{"create": true, "data": "x: y\n"}, "serviceAccount": map[string]any{"name": "mine", "create": false}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(notes, "create secret") || !strings.Contains(notes, "kube-system/mine (not created by this chart: it must exist)") {
		t.Errorf("NOTES.txt with the Secret created and an existing ServiceAccount:\n%s", notes)
	}
}

// TestImageTagIsTheChartsAppVersion: make image tags the image with the
// tag the chart pulls by default.
func TestImageTagIsTheChartsAppVersion(t *testing.T) {
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("make", "-n", "-C", "../../..", "image").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n image: %v\n%s", err, out)
	}
	if want := "-tag " + c.Metadata.AppVersion + " "; !strings.Contains(string(out), want) {
		t.Errorf("make -n image runs\n%s\nwithout %q (the chart's appVersion)", out, want)
	}
	if !strings.Contains(string(out), "-entrypoint cloud-controller-manager") {
		t.Errorf("make -n image runs\n%s\nwithout the daemon as entrypoint", out)
	}
}
