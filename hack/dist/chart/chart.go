package chart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// Release name and namespace of the plain manifests: the names a user of
// deploy/ gets, and the namespace upstream's CCM manifests use.
const (
	ReleaseName = "stratus"
	Namespace   = "kube-system"
)

// Options select what Render renders.
type Options struct {
	// Values override the chart's values.yaml.
	Values map[string]any
	// ShowOnly keeps only these templates (paths relative to the chart,
	// e.g. "templates/rbac.yaml"), like `helm template --show-only`.
	ShowOnly []string
}

// notesFile is the suffix of the chart's NOTES.txt among the rendered
// files: text for the operator, not a manifest.
const notesFile = "/templates/NOTES.txt"

// renderFiles renders every template of the chart at dir with o's values.
func renderFiles(dir string, o Options) (map[string]string, *chartutil.Capabilities, string, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, nil, "", fmt.Errorf("chart %s: %w", dir, err)
	}
	caps := chartutil.DefaultCapabilities
	vals, err := chartutil.ToRenderValues(chrt, o.Values, chartutil.ReleaseOptions{
		Name: ReleaseName, Namespace: Namespace, IsInstall: true, Revision: 1,
	}, caps)
	if err != nil {
		return nil, nil, "", fmt.Errorf("chart %s: %w", dir, err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, nil, "", fmt.Errorf("chart %s: render: %w", dir, err)
	}
	return files, caps, chrt.Name(), nil
}

// Notes renders the chart's NOTES.txt, as `helm install` prints it.
func Notes(dir string, o Options) (string, error) {
	files, _, name, err := renderFiles(dir, o)
	if err != nil {
		return "", err
	}
	notes, ok := files[name+notesFile]
	if !ok {
		return "", fmt.Errorf("chart %s: no %s", dir, notesFile)
	}
	return notes, nil
}

// Render renders the chart at dir as `helm template` does: values
// validated against values.schema.json, objects in Helm's install order,
// each preceded by a "# Source:" comment naming its template.
func Render(dir string, o Options) (string, error) {
	files, caps, name, err := renderFiles(dir, o)
	if err != nil {
		return "", err
	}
	delete(files, name+notesFile)
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", dir, err)
	}
	if len(hooks) > 0 {
		return "", fmt.Errorf("chart %s: hooks are not rendered into plain manifests, found %d", dir, len(hooks))
	}
	keep := map[string]bool{}
	for _, s := range o.ShowOnly {
		keep[filepath.ToSlash(filepath.Join(name, s))] = true
	}
	var b strings.Builder
	for _, m := range manifests {
		if len(keep) > 0 && !keep[m.Name] {
			continue
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("chart %s: nothing rendered (show only %v)", dir, o.ShowOnly)
	}
	return b.String(), nil
}

// Lint runs `helm lint --strict` on the chart at dir with values: any
// warning or error fails.
func Lint(dir string, values map[string]any) error {
	l := action.NewLint()
	l.Strict = true
	l.Namespace = Namespace
	res := l.Run([]string{dir}, values)
	var errs []error
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, fmt.Errorf("%s", m.Error()))
		}
	}
	errs = append(errs, res.Errors...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("helm lint %s: %w", dir, err)
	}
	return nil
}

// Variant is one set of plain manifests in deploy/.
type Variant struct {
	// File is the path under deploy/.
	File    string
	Options Options
	// Extract, if set, turns the rendered objects into the file's content
	// (a plain file rather than manifests); it is written without Header
	// when it returns JSON.
	Extract func(rendered string) ([]byte, error)
}

// Variants are what deploy/ holds. Only stratus.yaml sits at the top, so
// that `kubectl apply -f deploy/` installs the default and nothing else.
func Variants() []Variant {
	return []Variant{
		{File: "stratus.yaml"},
		{File: "daemonset/stratus.yaml", Options: Options{Values: map[string]any{"kind": "DaemonSet"}}},
		// The RBAC of an install with every controller on, routes and
		// node IPAM included, and the admission policy that narrows the
		// leader's pod patch: what the sandbox and the e2e tests apply.
		{File: "rbac/all-controllers.yaml", Options: Options{
			Values:   map[string]any{"allocateNodeCIDRs": true, "configureCloudRoutes": true, "clusterCIDR": "10.244.0.0/16"},
			ShowOnly: []string{"templates/rbac.yaml", "templates/leaderpodmark.yaml"},
		}},
		{File: "monitoring/stratus-monitoring.yaml", Options: monitoringOptions},
		// The same dashboard and alerts as plain files, for a Grafana
		// without the sidecar and a Prometheus without the operator.
		{File: "monitoring/stratus-dashboard.json", Options: monitoringOptions, Extract: dashboardJSON},
		{File: "monitoring/stratus-rules.yaml", Options: monitoringOptions, Extract: rulesFile},
	}
}

// monitoringOptions render everything the chart offers Prometheus and
// Grafana.
var monitoringOptions = Options{
	Values: map[string]any{
		"serviceMonitor": map[string]any{"enabled": true}, "podMonitor": map[string]any{"enabled": true},
		"grafanaDashboard": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true},
	},
	ShowOnly: []string{"templates/metrics.yaml", "templates/servicemonitor.yaml", "templates/podmonitor.yaml",
		"templates/dashboard.yaml", "templates/prometheusrule.yaml"},
}

// Header starts every file in deploy/.
const Header = "# Generated from charts/stratus by `make manifests`; do not edit.\n"

// WriteManifests renders every variant of the chart at chartDir into
// deployDir.
func WriteManifests(chartDir, deployDir string) error {
	return WriteVariants(chartDir, deployDir, Header, nil)
}

// WriteVariants renders every variant of the chart at chartDir into outDir,
// each manifest file starting with header, with values set on top of each
// variant's own (a release pins the image: {"image": {...}}); a value a
// variant sets itself cannot be overridden.
func WriteVariants(chartDir, outDir, header string, values map[string]any) error {
	for _, v := range Variants() {
		o := v.Options
		merged := map[string]any{}
		for k, val := range o.Values {
			merged[k] = val
		}
		for k, val := range values {
			if _, ok := merged[k]; ok {
				return fmt.Errorf("%s: the variant sets %s itself", v.File, k)
			}
			merged[k] = val
		}
		o.Values = merged
		out, err := Render(chartDir, o)
		if err != nil {
			return fmt.Errorf("%s: %w", v.File, err)
		}
		path := filepath.Join(outDir, v.File)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // checked-in sources are world-readable
			return fmt.Errorf("%s: %w", v.File, err)
		}
		content := []byte(header + out)
		if v.Extract != nil {
			if content, err = v.Extract(out); err != nil {
				return fmt.Errorf("%s: %w", v.File, err)
			}
		}
		if err := os.WriteFile(path, content, 0o644); err != nil { //nolint:gosec // checked-in sources are world-readable
			return fmt.Errorf("%s: %w", v.File, err)
		}
	}
	return nil
}
