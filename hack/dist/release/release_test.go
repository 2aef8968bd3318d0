package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSetChartVersion(t *testing.T) {
	t.Parallel()
	v, _ := ParseVersion("v0.3.0-rc.1")
	in := "apiVersion: v2\n# The chart's own version.\nversion: 0.2.0\n# The release.\nappVersion: v0.1.0\n"
	got, err := SetChartVersion([]byte(in), v)
	if err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v2\n# The chart's own version.\nversion: 0.3.0-rc.1\n# The release.\nappVersion: v0.3.0-rc.1\n"
	if string(got) != want {
		t.Errorf("SetChartVersion =\n%s\nwant\n%s", got, want)
	}
	if _, err := SetChartVersion([]byte("apiVersion: v2\nversion: 0.2.0\n"), v); err == nil {
		t.Error("a Chart.yaml without appVersion accepted")
	}
}

// TestPackageChartRepeats packages the repository's chart twice, from
// copies with different file times, and wants the same bytes, each entry
// at the commit's time.
func TestPackageChartRepeats(t *testing.T) {
	t.Parallel()
	mtime := time.Unix(1764400000, 0).UTC()
	var archives [][]byte
	for i := range 2 {
		dir := copyChart(t, time.Now().Add(time.Duration(i)*time.Hour))
		out := t.TempDir()
		pkg, err := PackageChart(dir, out, mtime)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(pkg)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, data)
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Fatal("two packagings of one chart differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(archives[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header has time %v, name %q", zr.ModTime, zr.Name)
	}
	tr := tar.NewReader(zr)
	var chartYAML []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(mtime) {
			t.Errorf("%s: time %v, want %v", h.Name, h.ModTime, mtime)
		}
		if h.Name == "stratus/Chart.yaml" {
			chartYAML, _ = io.ReadAll(tr)
		}
	}
	if !strings.Contains(string(chartYAML), "version: 0.2.0") || !strings.Contains(string(chartYAML), "appVersion: v0.2.0") {
		t.Errorf("packaged Chart.yaml:\n%s", chartYAML)
	}
}

// copyChart copies charts/stratus with every file's time set to mtime and
// Chart.yaml set to v0.2.0.
func copyChart(t *testing.T, mtime time.Time) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "charts", "stratus")
	dst := filepath.Join(t.TempDir(), "stratus")
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "Chart.yaml" {
			v, _ := ParseVersion("v0.2.0")
			if data, err = SetChartVersion(data, v); err != nil {
				return err
			}
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			return err
		}
		return os.Chtimes(to, mtime, mtime)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestWriteSums(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, data := range map[string]string{"b/x": "x", "a": "", "b/a": "abc"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // the second run must not sum the first's SHA256SUMS
		if err := WriteSums(dir); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	want := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a\n" +
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  b/a\n" +
		"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881  b/x\n"
	if string(got) != want {
		t.Errorf("SHA256SUMS =\n%s\nwant\n%s", got, want)
	}
}

func TestUnlicensed(t *testing.T) {
	t.Parallel()
	doc := `{"components": [
		{"name": "a.example/x", "version": "v1.0.0", "licenses": [{"license": {"id": "MIT"}}]},
		{"name": "b.example/y", "version": "v0.1.0"}]}`
	got, err := Unlicensed([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "b.example/y@v0.1.0" {
		t.Errorf("Unlicensed = %v, want [b.example/y@v0.1.0]", got)
	}
	if _, err := Unlicensed([]byte(`{"components": []}`)); err == nil {
		t.Error("an SBOM without components accepted")
	}
}

// TestCheck refuses what make release refuses, before building anything,
// reading the changelog of the commit, not of the work tree.
func TestCheck(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@invalid"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "CHANGELOG.md"), []byte(changelog), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "CHANGELOG.md")
	git("commit", "-q", "-m", "changelog")
	// An uncommitted section is not the commit's.
	if err := os.WriteFile(filepath.Join(repo, "CHANGELOG.md"), []byte("## [v9.9.9]\n\n- uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Root: repo, Commit: "HEAD"}
	for version, want := range map[string]string{
		"":       "no version",
		"v0.2":   "is not vMAJOR.MINOR.PATCH",
		"0.2.0":  "is not vMAJOR.MINOR.PATCH",
		"v9.9.9": "CHANGELOG.md has no section ## [v9.9.9]",
	} {
		o.Version = version
		if _, _, err := Check(t.Context(), o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(VERSION=%q): %v, want an error saying %q", version, err, want)
		}
	}
	o.Version = "v0.2.0"
	v, notes, err := Check(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if v.String() != "v0.2.0" || !strings.HasPrefix(notes, "## [v0.2.0]") {
		t.Errorf("Check(v0.2.0) = %v, notes starting %.40q", v, notes)
	}
	// A build between releases: [Unreleased] only under a pre-release.
	o.Unreleased = true
	if _, _, err := Check(t.Context(), o); err == nil || !strings.Contains(err.Error(), "only with a pre-release version") {
		t.Errorf("Check(v0.2.0, unreleased): %v, want a refusal", err)
	}
	o.Version = "v0.3.0-dev.1"
	if _, notes, err := Check(t.Context(), o); err != nil || !strings.HasPrefix(notes, "## [Unreleased]") {
		t.Errorf("Check(v0.3.0-dev.1, unreleased) = notes starting %.40q, %v; want the [Unreleased] section", notes, err)
	}
}

func TestRecord(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "last-release")
	c := Commit{Hash: "0123456789abcdef0123456789abcdef01234567"}
	if err := record(file, Version{Major: "0", Minor: "3", Patch: "0", Prerelease: "rc.1"}, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a pre-release was recorded as the last release: %v", err)
	}
	if err := record(file, Version{Major: "0", Minor: "3", Patch: "0"}, c); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "v0.3.0 "+c.Hash+"\n" {
		t.Fatalf("recorded %q, %v", b, err)
	}
	// An older version built again is not the last release; a newer one is.
	older := Commit{Hash: "1111111111111111111111111111111111111111"}
	if err := record(file, Version{Major: "0", Minor: "2", Patch: "10"}, older); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "v0.3.0 "+c.Hash+"\n" {
		t.Fatalf("v0.2.10 replaced the record of v0.3.0: %q", b)
	}
	if err := record(file, Version{Major: "0", Minor: "10", Patch: "0"}, older); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "v0.10.0 "+older.Hash+"\n" {
		t.Fatalf("v0.10.0 not recorded: %q", b)
	}
}
