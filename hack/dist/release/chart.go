package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// chartFieldRE finds a top-level field of Chart.yaml, to set it without
// rewriting (and losing the comments of) the rest of the file.
func chartFieldRE(field string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + field + `:.*$`)
}

// SetChartVersion sets Chart.yaml's version (v's chart version) and
// appVersion (v itself, the image tag the chart pulls by default).
func SetChartVersion(chartYAML []byte, v Version) ([]byte, error) {
	for field, value := range map[string]string{"version": v.ChartVersion(), "appVersion": v.String()} {
		re := chartFieldRE(field)
		if n := len(re.FindAll(chartYAML, -1)); n != 1 {
			return nil, fmt.Errorf("chart metadata (Chart.yaml): want one top-level %s, found %d", field, n)
		}
		chartYAML = re.ReplaceAllLiteral(chartYAML, []byte(field+": "+value))
	}
	return chartYAML, nil
}

// PackageChart packages the chart at dir into outDir as `helm package`
// does (Helm's own Save: the files .helmignore keeps, Chart.yaml
// re-encoded), then makes the archive a function of its content: every
// entry's time set to mtime, no time or name in the gzip header.
func PackageChart(dir, outDir string, mtime time.Time) (string, error) {
	c, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp("", "stratus-chart-")
	if err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	saved, err := chartutil.Save(c, tmp)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", dir, err)
	}
	data, err := os.ReadFile(saved)
	if err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	norm, err := normalizeTarGz(data, mtime)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", saved, err)
	}
	out := filepath.Join(outDir, filepath.Base(saved))
	if err := os.WriteFile(out, norm, 0o644); err != nil { //nolint:gosec // a published artefact
		return "", fmt.Errorf("chart: %w", err)
	}
	return out, nil
}

// normalizeTarGz rewrites a tar.gz with every entry's time set to mtime,
// no owner names, and a gzip header without time or file name, keeping the
// entries' order (Helm's: Chart.yaml first) and the header's Extra and
// Comment (Helm's mark).
func normalizeTarGz(data []byte, mtime time.Time) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	zw.Extra, zw.Comment = zr.Extra, zr.Comment
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = mtime, time.Time{}, time.Time{}
		h.Uname, h.Gname, h.Uid, h.Gid = "", "", 0, 0
		h.Format = tar.FormatUnknown
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, tr); err != nil { //nolint:gosec // Helm's own archive of the chart
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
